package annotations

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin/canary"
)

// canaryAnnotator is an Annotator whose only plugin is the built-in canary
// plugin, called in-process; calls counts the Ingresses sent to it.
func canaryAnnotator(t *testing.T) (*Annotator, *int) {
	t.Helper()
	plugin := canary.New()
	p := &hosted{desc: plugin.Describe(), keys: map[string]*ownedKey{}}
	owners := map[string]*ownedKey{}
	for _, spec := range p.desc.Annotations {
		k := &ownedKey{plugin: p, spec: spec, full: bus.DefaultAnnotationsPrefix + "/" + spec.Key,
			pattern: regexp.MustCompile(`^(?:` + spec.Pattern + `)$`)}
		owners[k.full], p.keys[k.full] = k, k
	}
	calls := new(int)
	call := func(ctx context.Context, _ *hosted, batch []plugins.Ingress) ([]plugins.Result, error) {
		*calls += len(batch)
		return plugin.Apply(ctx, batch)
	}
	return NewAnnotator(owners, bus.DefaultAnnotationsPrefix, call), calls
}

func backendJSON(t *testing.T, name string) []byte {
	return mustJSON(t, &bus.Backend{Name: name, Endpoints: []bus.Endpoint{{Address: "10.0.0.1", Port: "80"}}})
}

func canaryInfo(t *testing.T, weight string, extra map[string]string) []byte {
	ann := map[string]string{bus.DefaultAnnotationsPrefix + "/canary": "true", bus.DefaultAnnotationsPrefix + "/canary-weight": weight}
	for k, v := range extra {
		ann[k] = v
	}
	// Canary is the translator's decision, which this stands in for.
	return mustJSON(t, &bus.IngressInfo{Namespace: "shop", Name: "canary", Annotations: ann, Canary: true})
}

func decodeBackend(t *testing.T, out bus.Output, name string) *bus.Backend {
	t.Helper()
	return harness.Decode[bus.Backend](t, out.Puts, bus.Key(bus.KindBackend, name))
}

func TestCanaryBackends(t *testing.T) {
	ctx := context.Background()
	a, _ := canaryAnnotator(t)
	server := &bus.Server{Hostname: "shop.example.com", Locations: []bus.Location{
		{Path: "/", PathType: bus.PathPrefix, Backend: "shop-stable-80", Ingress: "shop/primary",
			Canary: &bus.LocationCanary{Ingress: "shop/canary", Backend: "shop-next-80"}},
	}}
	serverKey := bus.Key(bus.KindServer, "shop.example.com")
	out, err := a.Update(ctx, map[string][]byte{
		serverKey: mustJSON(t, server),
		bus.Key(bus.KindBackend, "shop-stable-80"):  backendJSON(t, "shop-stable-80"),
		bus.Key(bus.KindBackend, "shop-next-80"):    backendJSON(t, "shop-next-80"),
		bus.Key(bus.KindBackend, "shop-other-80"):   backendJSON(t, "shop-other-80"),
		bus.Key(bus.KindIngress, "shop", "primary"): mustJSON(t, &bus.IngressInfo{Namespace: "shop", Name: "primary"}),
		// Ignored on a canary: it would reject any other Ingress.
		bus.Key(bus.KindIngress, "shop", "canary"): canaryInfo(t, "30", map[string]string{bus.DefaultAnnotationsPrefix + "/server-snippet": "x"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	primary := decodeBackend(t, out, "shop-stable-80")
	if len(primary.AlternativeBackends) != 1 || primary.AlternativeBackends[0] != "shop-next-80" || primary.TrafficShapingPolicy != nil {
		t.Fatalf("primary: %+v", primary)
	}
	next := decodeBackend(t, out, "shop-next-80")
	if p := next.TrafficShapingPolicy; p == nil || p.Weight != 30 || p.WeightTotal != 100 || len(next.AlternativeBackends) != 0 {
		t.Fatalf("canary backend: %+v", next)
	}
	if other := decodeBackend(t, out, "shop-other-80"); other.AlternativeBackends != nil || other.TrafficShapingPolicy != nil {
		t.Fatalf("unrelated backend changed: %+v", other)
	}
	var info bus.IngressInfo
	if err := json.Unmarshal(out.Puts[bus.Key(bus.KindIngress, "shop", "canary")], &info); err != nil || info.Rejected {
		t.Fatalf("canary info: %+v %v", info, err)
	}

	// A weight change re-emits the two backends and no server: a push to
	// Lua, no reload.
	out, err = a.Update(ctx, map[string][]byte{bus.Key(bus.KindIngress, "shop", "canary"): canaryInfo(t, "70", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Puts[serverKey]; ok {
		t.Errorf("a weight change re-emitted the server")
	}
	if p := decodeBackend(t, out, "shop-next-80").TrafficShapingPolicy; p == nil || p.Weight != 70 {
		t.Fatalf("weight not updated: %+v", p)
	}

	// An invalid canary is rejected and dropped: the primary serves alone.
	out, err = a.Update(ctx, map[string][]byte{bus.Key(bus.KindIngress, "shop", "canary"): canaryInfo(t, "70",
		map[string]string{bus.DefaultAnnotationsPrefix + "/canary-weight-total": "0"})})
	if err != nil {
		t.Fatal(err)
	}
	if b := decodeBackend(t, out, "shop-stable-80"); len(b.AlternativeBackends) != 0 {
		t.Fatalf("rejected canary still an alternative: %+v", b)
	}
	if err := json.Unmarshal(out.Puts[bus.Key(bus.KindIngress, "shop", "canary")], &info); err != nil || !info.Rejected || len(info.Problems) == 0 {
		t.Fatalf("rejected canary info: %+v %v", info, err)
	}

	// Valid again, then the location loses its canary (the canary Ingress
	// was deleted): both backends go back to plain.
	if _, err := a.Update(ctx, map[string][]byte{bus.Key(bus.KindIngress, "shop", "canary"): canaryInfo(t, "10", nil)}); err != nil {
		t.Fatal(err)
	}
	server.Locations[0].Canary = nil
	out, err = a.Update(ctx, map[string][]byte{serverKey: mustJSON(t, server), bus.Key(bus.KindIngress, "shop", "canary"): nil})
	if err != nil {
		t.Fatal(err)
	}
	if b := decodeBackend(t, out, "shop-stable-80"); len(b.AlternativeBackends) != 0 {
		t.Fatalf("primary keeps a deleted canary: %+v", b)
	}
	if b := decodeBackend(t, out, "shop-next-80"); b.TrafficShapingPolicy != nil {
		t.Fatalf("canary backend keeps its policy: %+v", b)
	}

	// Endpoint changes of an unrelated backend pass through byte for byte.
	raw := backendJSON(t, "shop-other-80")
	out, err = a.Update(ctx, map[string][]byte{bus.Key(bus.KindBackend, "shop-other-80"): raw})
	if err != nil || string(out.Puts[bus.Key(bus.KindBackend, "shop-other-80")]) != string(raw) {
		t.Fatalf("pass-through: %v %s", err, out.Puts[bus.Key(bus.KindBackend, "shop-other-80")])
	}
	out, err = a.Update(ctx, map[string][]byte{bus.Key(bus.KindBackend, "shop-other-80"): nil})
	if err != nil || len(out.Deletes) != 1 || out.Deletes[0] != bus.Key(bus.KindBackend, "shop-other-80") {
		t.Fatalf("delete: %v %v", err, out.Deletes)
	}
}

// TestCanaryTypoReported: a canary Ingress ignores ingress-nginx's other
// annotations, but a name nobody knows is still reported as unknown.
func TestCanaryTypoReported(t *testing.T) {
	ctx := context.Background()
	a, _ := canaryAnnotator(t)
	key := bus.DefaultAnnotationsPrefix + "/canary-wieght"
	out, err := a.Update(ctx, map[string][]byte{
		bus.Key(bus.KindIngress, "shop", "canary"): canaryInfo(t, "30", map[string]string{
			key: "30", bus.DefaultAnnotationsPrefix + "/proxy-body-size": "8m"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var info bus.IngressInfo
	if err := json.Unmarshal(out.Puts[bus.Key(bus.KindIngress, "shop", "canary")], &info); err != nil || info.Rejected {
		t.Fatalf("canary info: %+v %v", info, err)
	}
	if len(info.Problems) != 1 || info.Problems[0].Reason != ReasonUnknownAnnotation || info.Problems[0].Field != "metadata.annotations["+key+"]" ||
		!strings.Contains(info.Problems[0].Message, "did you mean "+bus.DefaultAnnotationsPrefix+"/canary-weight?") {
		t.Fatalf("problems %+v: want one UnknownAnnotation for the typo", info.Problems)
	}
}
