package applier

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestDecide(t *testing.T) {
	base := func() desiredState {
		return desiredState{
			Files:        map[string]string{"nginx.conf": "main", "servers/a.conf": "server a"},
			Backends:     newNamedValues(map[string]json.RawMessage{"ns-a-80": json.RawMessage(`{"name":"ns-a-80","endpoints":[{"address":"10.0.0.1","port":"80"}]}`)}),
			Certificates: map[string]luaCertificate{"ns/a": {PEM: "pem-1", Hosts: []string{"a.example.com"}}},
		}
	}
	cases := []struct {
		name    string
		running *desiredState
		change  func(*desiredState)
		fresh   bool
		want    applyPlan
	}{
		{"first apply does everything", nil, func(*desiredState) {}, true, applyPlan{true, true, true}},
		{"nothing changed", ptr(base()), func(*desiredState) {}, false, applyPlan{}},
		{"endpoint change is dynamic", ptr(base()), func(d *desiredState) {
			d.Backends.set("ns-a-80", json.RawMessage(`{"name":"ns-a-80","endpoints":[{"address":"10.0.0.2","port":"80"}]}`))
		}, false, applyPlan{PushBackends: true}},
		{"new backend is dynamic", ptr(base()), func(d *desiredState) {
			d.Backends.set("ns-b-80", json.RawMessage(`{"name":"ns-b-80","endpoints":[]}`))
		}, false, applyPlan{PushBackends: true}},
		{"certificate renewal is dynamic", ptr(base()), func(d *desiredState) {
			d.Certificates["ns/a"] = luaCertificate{PEM: "pem-2", Hosts: []string{"a.example.com"}}
		}, false, applyPlan{PushCertificates: true}},
		{"certificate for another host is dynamic", ptr(base()), func(d *desiredState) {
			d.Certificates["ns/a"] = luaCertificate{PEM: "pem-1", Hosts: []string{"a.example.com", "b.example.com"}}
		}, false, applyPlan{PushCertificates: true}},
		{"passthrough endpoint change is neither a reload nor a push", ptr(base()), func(d *desiredState) {
			d.Passthrough = map[string]string{"pass.example.com": "10.0.0.9:443\n"}
		}, false, applyPlan{}},
		{"server change reloads", ptr(base()), func(d *desiredState) { d.Files["servers/a.conf"] = "server a v2" }, false, applyPlan{WriteConfig: true}},
		{"new server file reloads", ptr(base()), func(d *desiredState) { d.Files["servers/b.conf"] = "server b" }, false, applyPlan{WriteConfig: true}},
		{"removed server file reloads", ptr(base()), func(d *desiredState) { delete(d.Files, "servers/a.conf") }, false, applyPlan{WriteConfig: true}},
		{"restarted nginx gets every payload again", ptr(base()), func(*desiredState) {}, true, applyPlan{PushBackends: true, PushCertificates: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := base()
			c.change(&next)
			if got := decide(c.running, next, c.fresh); got != c.want {
				t.Fatalf("decide = %+v, want %+v", got, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestPayloads(t *testing.T) {
	d := desiredState{
		Backends: newNamedValues(map[string]json.RawMessage{"b": json.RawMessage(`{"name":"b"}`), "a": json.RawMessage(`{"name":"a"}`)}),
		Certificates: map[string]luaCertificate{
			"ns/x": {PEM: "X", Hosts: []string{"x.example.com", "*.x.example.com"}},
		},
	}
	if got := string(d.backendsPayload()); got != `[{"name":"a"},{"name":"b"}]` {
		t.Fatalf("backends payload %s", got)
	}
	body, err := d.certificatesPayload(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"certificates":{"ns/x":"X"},"servers":{"*.x.example.com":"ns/x","x.example.com":"ns/x"}}`
	if string(body) != want {
		t.Fatalf("certificates payload %s", body)
	}
}

// TestDesiredTable feeds renderer snapshots to the applier's copy of the
// table: the first is whole, later ones carry only changes, and a value that
// does not decode holds the table back until the renderer replaces it.
func TestDesiredTable(t *testing.T) {
	table := newDesiredTable(func(s string) string { return s })
	full := bus.Snapshot{Full: true, Puts: map[string][]byte{
		bus.Key(bus.KindFile, "nginx.conf"):                 []byte(`{"path":"nginx.conf","content":"main"}`),
		bus.Key(bus.KindBackend, "ns-a-80"):                 []byte(`{"name":"ns-a-80"}`),
		bus.Key(bus.KindCertificate, "ns", "a"):             []byte(`{"pem":"P","hosts":["a.example.com"]}`),
		bus.Key(bus.KindFile, "servers/a.example.com.conf"): []byte(`{"path":"servers/a.example.com.conf","content":"server a"}`),
	}}
	if err := table.update(full); err != nil {
		t.Fatal(err)
	}
	if len(table.desired.Files) != 2 || table.desired.Backends.len() != 1 || table.desired.Certificates["ns/a"].PEM != "P" {
		t.Fatalf("after the whole table: %+v", table.desired)
	}

	bad := bus.Snapshot{Puts: map[string][]byte{bus.Key(bus.KindBackend, "ns-b-80"): []byte(`{"name":"ns-b-80"}`), bus.Key(bus.KindCertificate, "ns", "a"): []byte(`not json`)}}
	if err := table.update(bad); err == nil {
		t.Fatal("a certificate that does not decode was accepted")
	}
	deleteOther := bus.Snapshot{Deletes: []string{bus.Key(bus.KindBackend, "ns-a-80")}}
	if err := table.update(deleteOther); err == nil {
		t.Fatal("the table was understood again while a value is still bad")
	}
	fixed := bus.Snapshot{Puts: map[string][]byte{bus.Key(bus.KindCertificate, "ns", "a"): []byte(`{"pem":"Q","hosts":["a.example.com"]}`)}}
	if err := table.update(fixed); err != nil {
		t.Fatalf("a replaced value still holds the table back: %v", err)
	}
	_, hasA := table.desired.Backends.get("ns-a-80")
	if b, _ := table.desired.Backends.get("ns-b-80"); hasA || b == nil || table.desired.Certificates["ns/a"].PEM != "Q" {
		t.Fatalf("after the changes: %+v", table.desired)
	}

	restart := bus.Snapshot{Full: true, Puts: map[string][]byte{bus.Key(bus.KindBackend, "ns-c-80"): []byte(`{"name":"ns-c-80"}`)}}
	if err := table.update(restart); err != nil {
		t.Fatal(err)
	}
	if len(table.desired.Files) != 0 || table.desired.Backends.len() != 1 || len(table.desired.Certificates) != 0 {
		t.Fatalf("a whole table did not replace the state: %+v", table.desired)
	}
}

// TestDesiredTableJoinsSplitFiles feeds a server file the renderer split
// across keys: the applier joins it, takes a change to one part, holds the
// table back while a part is missing, and forgets the parts with the file.
func TestDesiredTableJoinsSplitFiles(t *testing.T) {
	const path = "servers/big.example.com.conf"
	content := strings.Repeat("location /a { }\n", 3*bus.FilePartSize/16)
	puts := func(content string) map[string][]byte {
		head, parts := bus.SplitFile(path, content)
		m := map[string][]byte{bus.Key(bus.KindFile, path): mustJSON(t, head)}
		for _, p := range parts {
			m[bus.FilePartKey(path, p.Index)] = mustJSON(t, p)
		}
		return m
	}
	table := newDesiredTable(func(s string) string { return s })
	if err := table.update(bus.Snapshot{Full: true, Puts: puts(content)}); err != nil {
		t.Fatal(err)
	}
	if table.desired.Files[path] != content {
		t.Fatalf("joined %d bytes, want %d", len(table.desired.Files[path]), len(content))
	}
	// One part changes: the head is equal and not resent.
	changed := strings.Replace(content, "/a", "/b", 1)
	first := bus.FilePartKey(path, 0)
	if err := table.update(bus.Snapshot{Puts: map[string][]byte{first: puts(changed)[first]}}); err != nil {
		t.Fatal(err)
	}
	if table.desired.Files[path] != changed {
		t.Fatal("a changed part was not joined in")
	}
	// A part missing (never the renderer's doing) holds the table back.
	if err := table.update(bus.Snapshot{Deletes: []string{bus.FilePartKey(path, 1)}}); err == nil {
		t.Fatal("a file with a missing part was accepted")
	}
	// The file shrinks to one message: its parts go.
	small := bus.Snapshot{Puts: puts("server small\n"), Deletes: []string{bus.FilePartKey(path, 0), bus.FilePartKey(path, 2)}}
	if err := table.update(small); err != nil || table.desired.Files[path] != "server small\n" {
		t.Fatalf("after shrinking: %q %v", table.desired.Files[path], err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBackendsDelta: the delta body carries only the backends that are new
// or changed and the names of the ones gone, on top of the given version.
func TestBackendsDelta(t *testing.T) {
	running := map[string]json.RawMessage{
		"a": json.RawMessage(`{"name":"a","endpoints":[1]}`),
		"b": json.RawMessage(`{"name":"b"}`),
		"c": json.RawMessage(`{"name":"c"}`),
	}
	tests := []struct {
		name string
		next map[string]json.RawMessage
		want string
	}{
		{"nothing changed", maps.Clone(running), ""},
		{"one endpoint", map[string]json.RawMessage{"a": json.RawMessage(`{"name":"a","endpoints":[2]}`), "b": running["b"], "c": running["c"]},
			`{"base":7,"backends":[{"name":"a","endpoints":[2]}],"removed":[]}`},
		{"added and removed", map[string]json.RawMessage{"a": running["a"], "d": json.RawMessage(`{"name":"d"}`), "0": json.RawMessage(`{"name":"0"}`)},
			`{"base":7,"backends":[{"name":"0"},{"name":"d"}],"removed":["b","c"]}`},
		{"all removed", map[string]json.RawMessage{}, `{"base":7,"backends":[],"removed":["a","b","c"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := desiredState{Backends: newNamedValues(tt.next)}.backendsDelta(ptr(newNamedValues(running)), 7)
			if string(got) != tt.want {
				t.Errorf("delta %s, want %s", got, tt.want)
			}
			if got != nil && !json.Valid(got) {
				t.Errorf("delta is not JSON: %s", got)
			}
		})
	}
}

// The routes of Lua-routed hosts go out in the same delta shape, under
// "routes"; while a reload is coming, a route the new configuration drops
// stays (its host may be moving to a server block the reload brings).
func TestRoutesDeltaAndKeptRoutes(t *testing.T) {
	running := map[string]json.RawMessage{"a.example.com": json.RawMessage(`{"host":"a.example.com"}`),
		"b.example.com": json.RawMessage(`{"host":"b.example.com"}`)}
	next := map[string]json.RawMessage{"a.example.com": running["a.example.com"],
		"c.example.com": json.RawMessage(`{"host":"c.example.com"}`)}
	got := namedDelta(routesKind.field, next, running, 3)
	want := `{"base":3,"routes":[{"host":"c.example.com"}],"removed":["b.example.com"]}`
	if string(got) != want {
		t.Errorf("routes delta %s, want %s", got, want)
	}
	kept := keptRoutes(next, running)
	if len(kept) != 3 || string(kept["b.example.com"]) != string(running["b.example.com"]) {
		t.Errorf("kept routes %v, want next's and b.example.com", slices.Sorted(maps.Keys(kept)))
	}
	if namedDelta(routesKind.field, kept, kept, 4) != nil {
		t.Error("a delta of equal routes is not empty")
	}
}

// TestSnapshotKeepsItsState: a state handed to the apply loop never
// changes when later snapshots arrive; a map no later snapshot touched is
// still shared with it (nothing copied), one that was touched is not.
func TestSnapshotKeepsItsState(t *testing.T) {
	table := newDesiredTable(func(s string) string { return s })
	file := func(content string) []byte { return fmt.Appendf(nil, `{"content":%q}`, content) }
	full := bus.Snapshot{Full: true, Puts: map[string][]byte{
		bus.Key(bus.KindFile, "nginx.conf"):       file("one"),
		bus.Key(bus.KindBackend, "ns-a-80"):       []byte(`{"name":"ns-a-80","v":1}`),
		bus.Key(bus.KindRoute, "a.example"):       []byte(`{"host":"a.example"}`),
		bus.Key(bus.KindBackend, "ns-b-80"):       []byte(`{"name":"ns-b-80"}`),
		bus.Key(bus.KindRoute, "b.example"):       []byte(`{"host":"b.example"}`),
		bus.Key(bus.KindPassthrough, "p.example"): []byte(`{"host":"p.example","endpoints":["10.0.0.1:443"]}`),
	}}
	if err := table.update(full); err != nil {
		t.Fatal(err)
	}
	first := table.snapshot()
	// Every kind of the state is copied before a write.
	if err := table.update(bus.Snapshot{Puts: map[string][]byte{
		bus.Key(bus.KindPassthrough, "p.example"): []byte(`{"host":"p.example","endpoints":["10.0.0.2:443"]}`)}}); err != nil {
		t.Fatal(err)
	}
	if first.Passthrough["p.example"] == table.snapshot().Passthrough["p.example"] {
		t.Error("the first state's passthrough endpoints changed")
	}
	endpoint := bus.Snapshot{Puts: map[string][]byte{bus.Key(bus.KindBackend, "ns-a-80"): []byte(`{"name":"ns-a-80","v":2}`)},
		Deletes: []string{bus.Key(bus.KindBackend, "ns-b-80")}}
	if err := table.update(endpoint); err != nil {
		t.Fatal(err)
	}
	second := table.snapshot()
	if got, _ := first.Backends.get("ns-a-80"); string(got) != `{"name":"ns-a-80","v":1}` || first.Backends.len() != 2 {
		t.Errorf("the first state's backends changed: %v", first.Backends.all())
	}
	if got, _ := second.Backends.get("ns-a-80"); string(got) != `{"name":"ns-a-80","v":2}` || second.Backends.len() != 1 {
		t.Errorf("the second state's backends: %v", second.Backends.all())
	}
	// Only the shards of the two backends written were copied.
	copied := 0
	for i := range first.Backends.shards {
		if !sameMap(first.Backends.shards[i], second.Backends.shards[i]) {
			copied++
		}
	}
	if want := len(map[int]bool{shardOf("ns-a-80"): true, shardOf("ns-b-80"): true}); copied != want {
		t.Errorf("%d backend shards copied, want %d", copied, want)
	}
	if !sameMap(first.Routes, second.Routes) || !sameMap(first.Files, second.Files) {
		t.Error("maps an endpoint change did not touch were copied")
	}
	if err := table.update(bus.Snapshot{Puts: map[string][]byte{bus.Key(bus.KindFile, "nginx.conf"): file("two")},
		Deletes: []string{bus.Key(bus.KindRoute, "a.example")}}); err != nil {
		t.Fatal(err)
	}
	third := table.snapshot()
	if second.Files["nginx.conf"] != "one" || len(second.Routes) != 2 || third.Files["nginx.conf"] != "two" || len(third.Routes) != 1 {
		t.Errorf("files and routes: second %v %v, third %v %v", second.Files, second.Routes, third.Files, third.Routes)
	}
}

// TestSameMap: one map is the same map, however it is passed; an equal
// copy is not, nor a nil map next to an empty one.
func TestSameMap(t *testing.T) {
	a := map[string]json.RawMessage{"h": json.RawMessage(`{}`)}
	b := a
	if !sameMap(a, b) {
		t.Error("a map is not the same as itself")
	}
	if sameMap(a, maps.Clone(a)) {
		t.Error("a copy is the same map")
	}
	if !sameMap[json.RawMessage](nil, nil) {
		t.Error("nil is not the same as nil")
	}
	if sameMap(nil, map[string]json.RawMessage{}) {
		t.Error("nil is the same as an empty map")
	}
}

// TestNamedValues: a copy shares every shard until one is owned; a write
// to an owned shard leaves the other copy as it was, and comparing or
// diffing the two looks only at the shards they do not share.
func TestNamedValues(t *testing.T) {
	values := map[string]json.RawMessage{}
	for i := range 1000 {
		name := fmt.Sprintf("ns-web%d-80", i)
		values[name] = json.RawMessage(fmt.Sprintf(`{"name":%q}`, name))
	}
	v := newNamedValues(values)
	if v.len() != 1000 || len(v.sortedNames()) != 1000 || !maps.EqualFunc(v.all(), values, jsonEqual) {
		t.Fatalf("holds %d values, not the 1000 put in", v.len())
	}
	w := v
	if !namedEqual(&v, &w) {
		t.Error("a copy is not equal")
	}
	w.own("ns-web7-80")
	w.set("ns-web7-80", json.RawMessage(`{"name":"ns-web7-80","v":2}`))
	w.own("ns-new-80")
	w.set("ns-new-80", json.RawMessage(`{"name":"ns-new-80"}`))
	w.own("ns-web9-80")
	w.remove("ns-web9-80")
	if got, _ := v.get("ns-web7-80"); string(got) != `{"name":"ns-web7-80"}` || v.len() != 1000 {
		t.Errorf("the copy's writes changed the original: %s, %d values", got, v.len())
	}
	if namedEqual(&v, &w) {
		t.Error("changed copies are equal")
	}
	changed, removed := namedChanges(&w, &v)
	slices.Sort(changed)
	if !slices.Equal(changed, []string{"ns-new-80", "ns-web7-80"}) || !slices.Equal(removed, []string{"ns-web9-80"}) {
		t.Errorf("changes %v, removed %v", changed, removed)
	}
	if c, r := namedChanges(&v, &v); c != nil || r != nil {
		t.Errorf("a state differs from itself: %v %v", c, r)
	}
}

// newNamedValues holds values, copied in.
func newNamedValues(values map[string]json.RawMessage) namedValues {
	var v namedValues
	for name, data := range values {
		v.set(name, data)
	}
	return v
}

// all is every value of v by name, in one map.
func (v *namedValues) all() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, s := range v.shards {
		maps.Copy(out, s)
	}
	return out
}
