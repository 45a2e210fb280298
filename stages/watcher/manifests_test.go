package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// secretMarker stands for Secret data: no error or log line may hold it.
const secretMarker = "Sup3rS3cretMarker"

func TestParseManifestAllKinds(t *testing.T) {
	data, err := os.ReadFile("testdata/all-kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, skipped, err := parseManifest("all-kinds.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key, source, apiVersion, kind string
		into                          any
	}{
		{"object.ingressclass._.switchyard", "all-kinds.yaml:4", "networking.k8s.io/v1", "IngressClass", &networkingv1.IngressClass{}},
		{"object.ingress.shop.web", "all-kinds.yaml:11", "networking.k8s.io/v1", "Ingress", &networkingv1.Ingress{}},
		{"object.service.shop.web", "all-kinds.yaml:35", "v1", "Service", &corev1.Service{}},
		{"object.endpointslice.shop.web-abc12", "all-kinds.yaml:48", "discovery.k8s.io/v1", "EndpointSlice", &discoveryv1.EndpointSlice{}},
		{"object.secret.shop.shop-tls", "all-kinds.yaml:85", "v1", "Secret", &corev1.Secret{}},
		{"object.configmap.default.switchyard", "all-kinds.yaml:96", "v1", "ConfigMap", &corev1.ConfigMap{}},
	}
	if len(objs) != len(want) {
		t.Fatalf("got %d objects, want %d: %v", len(objs), len(want), objKeys(objs))
	}
	for i, w := range want {
		o := objs[i]
		if o.Key != w.key || o.Source != w.source {
			t.Errorf("object %d: got %s at %s, want %s at %s", i, o.Key, o.Source, w.key, w.source)
		}
		dec := json.NewDecoder(strings.NewReader(string(o.JSON)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(w.into); err != nil {
			t.Errorf("%s: JSON does not decode into %T: %v", w.key, w.into, err)
		}
		var tm struct{ APIVersion, Kind string }
		if err := json.Unmarshal(o.JSON, &tm); err != nil || tm.APIVersion != w.apiVersion || tm.Kind != w.kind {
			t.Errorf("%s: apiVersion/kind %q/%q, want %q/%q", w.key, tm.APIVersion, tm.Kind, w.apiVersion, w.kind)
		}
	}
	if len(skipped) != 1 || skipped[0].kind != "Deployment" || skipped[0].source != "all-kinds.yaml:66" || skipped[0].knownKind {
		t.Errorf("skipped = %+v, want the Deployment at all-kinds.yaml:66", skipped)
	}

	// Spot checks of the decoded content.
	var ing networkingv1.Ingress
	mustUnmarshal(t, objs[1].JSON, &ing)
	if ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number != 80 || *ing.Spec.IngressClassName != "switchyard" {
		t.Errorf("ingress decoded wrong: %s", objs[1].JSON)
	}
	var svc corev1.Service
	mustUnmarshal(t, objs[2].JSON, &svc)
	if svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
		t.Errorf("service decoded wrong: %s", objs[2].JSON)
	}
	var eps discoveryv1.EndpointSlice
	mustUnmarshal(t, objs[3].JSON, &eps)
	if eps.Endpoints[0].Addresses[0] != "10.0.0.7" || !*eps.Endpoints[0].Conditions.Ready {
		t.Errorf("endpointslice decoded wrong: %s", objs[3].JSON)
	}
	var sec corev1.Secret
	mustUnmarshal(t, objs[4].JSON, &sec)
	if string(sec.Data["tls.crt"]) != "CERTIFICATE" || string(sec.Data["tls.key"]) != "KEY-MATERIAL" || sec.StringData != nil {
		t.Errorf("secret decoded wrong: %s", objs[4].JSON)
	}
	var ic networkingv1.IngressClass
	mustUnmarshal(t, objs[0].JSON, &ic)
	if ic.Namespace != "" || ic.Spec.Controller != "switchyard.dev/ingress-controller" {
		t.Errorf("ingressclass decoded wrong: %s", objs[0].JSON)
	}
}

func TestParseManifestKeys(t *testing.T) {
	objs, err := ParseManifest("keys.yaml", []byte(`
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx.example.com
  namespace: ignored-for-cluster-scoped
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: my.app
  namespace: team-a
`))
	if err != nil {
		t.Fatal(err)
	}
	// Golden keys: a '.' in a name is escaped so it never splits a subject token.
	want := []string{
		"object.ingressclass._.nginx_2eexample_2ecom",
		"object.ingress.team-a.my_2eapp",
	}
	if got := objKeys(objs); !slices.Equal(got, want) {
		t.Fatalf("keys = %q, want %q", got, want)
	}
	// The same keys, built the documented way.
	if objs[0].Key != bus.Key(bus.KindObject, "ingressclass", bus.ClusterScope, "nginx.example.com") ||
		objs[1].Key != bus.Key(bus.KindObject, "ingress", "team-a", "my.app") {
		t.Errorf("keys do not match bus.Key: %q", objKeys(objs))
	}
	if strings.Contains(string(objs[0].JSON), "ignored-for-cluster-scoped") {
		t.Errorf("cluster-scoped object kept its namespace: %s", objs[0].JSON)
	}
}

func TestParseManifestDocuments(t *testing.T) {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	}
	tests := []struct {
		name    string
		in      string
		keys    []string
		sources []string
	}{
		{"empty file", "", nil, nil},
		{"only separators and comments", "---\n# nothing\n---\n\n---\n...\n", nil, nil},
		{"null document", "~\n---\n" + cm("a"), []string{"object.configmap.default.a"}, []string{"f.yaml:3"}},
		{"single document", cm("a"), []string{"object.configmap.default.a"}, []string{"f.yaml:1"}},
		{"leading separator", "---\n" + cm("a"), []string{"object.configmap.default.a"}, []string{"f.yaml:2"}},
		{
			"three documents with comments and blanks",
			"# header\n\n" + cm("a") + "---\n\n# about b\n" + cm("b") + "--- # trailing comment\n" + cm("c"),
			[]string{"object.configmap.default.a", "object.configmap.default.b", "object.configmap.default.c"},
			[]string{"f.yaml:3", "f.yaml:10", "f.yaml:15"},
		},
		{"CRLF line endings", strings.ReplaceAll(cm("a")+"---\n"+cm("b"), "\n", "\r\n"),
			[]string{"object.configmap.default.a", "object.configmap.default.b"}, []string{"f.yaml:1", "f.yaml:6"}},
		{"byte order mark", "\ufeff" + cm("a"), []string{"object.configmap.default.a"}, []string{"f.yaml:1"}},
		{"document end marker", cm("a") + "...\n" + cm("b"),
			[]string{"object.configmap.default.a", "object.configmap.default.b"}, []string{"f.yaml:1", "f.yaml:6"}},
		{"inline document start", "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			[]string{"object.configmap.default.a"}, []string{"f.yaml:1"}},
		{"plain scalar starting with dashes is not a separator", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: |\n    ---not-a-separator\n",
			[]string{"object.configmap.default.a"}, []string{"f.yaml:1"}},
		{"unknown kinds are skipped", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec: {whatever: 1}\n---\n" +
			"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n" + cm("a"),
			[]string{"object.configmap.default.a"}, []string{"f.yaml:11"}},
		{"known kind at an old apiVersion is skipped", "apiVersion: networking.k8s.io/v1beta1\nkind: Ingress\nmetadata:\n  name: x\n",
			nil, nil},
		{"later duplicate kept in order", cm("a") + "---\n" + cm("a"),
			[]string{"object.configmap.default.a", "object.configmap.default.a"}, []string{"f.yaml:1", "f.yaml:6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ParseManifest("f.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := objKeys(objs); !slices.Equal(got, tc.keys) {
				t.Errorf("keys = %q, want %q", got, tc.keys)
			}
			var sources []string
			for _, o := range objs {
				sources = append(sources, o.Source)
			}
			if !slices.Equal(sources, tc.sources) {
				t.Errorf("sources = %q, want %q", sources, tc.sources)
			}
		})
	}
}

func TestParseManifestNamespaceDefault(t *testing.T) {
	objs, err := ParseManifest("f.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"))
	if err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	mustUnmarshal(t, objs[0].JSON, &svc)
	if objs[0].Key != "object.service.default.web" || svc.Namespace != "default" {
		t.Errorf("key %s, namespace %q; want the default namespace", objs[0].Key, svc.Namespace)
	}
}

func TestParseManifestStringData(t *testing.T) {
	objs, err := ParseManifest("s.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ns
data:
  user: YWRtaW4=       # admin
  password: b2xk       # old, overridden by stringData
stringData:
  password: new
  token: t0k
`))
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	mustUnmarshal(t, objs[0].JSON, &s)
	want := map[string]string{"user": "admin", "password": "new", "token": "t0k"}
	if len(s.Data) != len(want) {
		t.Errorf("data = %q, want %q", s.Data, want)
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
		}
	}
	if s.StringData != nil || strings.Contains(string(objs[0].JSON), "stringData") {
		t.Errorf("stringData left in the object: %s", objs[0].JSON)
	}

	// stringData alone also works.
	objs, err = ParseManifest("s.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData: {a: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mustUnmarshal(t, objs[0].JSON, &s)
	if string(s.Data["a"]) != "b" {
		t.Errorf("stringData not merged: %s", objs[0].JSON)
	}
}

func TestParseManifestErrors(t *testing.T) {
	svc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{"bad YAML reports the parser's line", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n    oops: here\n",
			[]string{"file.yaml:5:", "invalid YAML"}},
		{"bad YAML in a later document", "# first\n" + svc + "---\n" + svc + "spec:\n  ports: [80\n",
			[]string{"file.yaml:12:", "invalid YAML"}},
		{"tab indentation", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n",
			[]string{"file.yaml:4:", "invalid YAML"}},
		{"unknown field", svc + "spec:\n  ports:\n  - port: 80\n    targetPrt: 8080\n",
			[]string{"file.yaml:8:", "Service: unknown field in spec.ports[0]"}},
		{"unknown top-level field", svc + "spce: {}\n", []string{"file.yaml:5:", "unknown field at the top level"}},
		{"field names are case-sensitive", "apiVersion: v1\nkind: ConfigMap\nMetadata:\n  name: a\n",
			[]string{"file.yaml:3:", "unknown field"}},
		{"unknown field in the second list item", svc + "spec:\n  ports:\n  - port: 80\n  - port: 81\n    nme: x\n",
			[]string{"file.yaml:9:", "unknown field in spec.ports[1]"}},
		{"wrong type", svc + "spec:\n  ports:\n  - port: eighty\n", []string{"file.yaml:7:", "wrong type in spec.ports.port: got a string, want a number"}},
		{"duplicate key", svc + "metadata:\n  name: other\n", []string{"file.yaml:5:", "duplicate key"}},
		{"duplicate scalar key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: '1'\n  y: '2'\n  x: '3'\n", []string{"file.yaml:8:", "duplicate key"}},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n", []string{"file.yaml:3:", "metadata.name is missing"}},
		{"missing metadata", "\n\napiVersion: v1\nkind: ConfigMap\n", []string{"file.yaml:3:", "metadata.name is missing"}},
		{"generateName only", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n", []string{"file.yaml:4:", "generateName"}},
		{"invalid name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_Valid\n", []string{"file.yaml:4:", "metadata.name is invalid", "RFC 1123"}},
		{"service name must be a DNS label", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a.b\n", []string{"file.yaml:4:", "metadata.name is invalid", "DNS-1035"}},
		{"invalid namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: -bad\n", []string{"file.yaml:5:", "metadata.namespace is invalid"}},
		{"name too long", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + strings.Repeat("a", 254) + "\n", []string{"file.yaml:4:", "no more than 253"}},
		{"invalid configmap key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  'bad key': x\n", []string{"file.yaml:5:", "data has an invalid key"}},
		{"missing kind", "apiVersion: v1\nmetadata:\n  name: a\n", []string{"file.yaml:1:", "kind is missing"}},
		{"missing apiVersion", "kind: ConfigMap\nmetadata:\n  name: a\n", []string{"file.yaml:1:", "apiVersion is missing"}},
		{"not an object", "# list\n- a\n- b\n", []string{"file.yaml:2:", "not a mapping"}},
		{"kind not a string", "apiVersion: v1\nkind: [ConfigMap]\n", []string{"file.yaml:1:", "kind must be a string"}},
		{"bad base64", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\ndata:\n  k: '***'\n", []string{"file.yaml:5:", "not valid base64"}},
		{"error after a good document fails the file", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\n",
			[]string{"file.yaml:5:", "apiVersion is missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ParseManifest("file.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; objects %q", objKeys(objs))
			}
			if objs != nil {
				t.Errorf("objects returned with an error: %q", objKeys(objs))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// secretLeaks are broken Secrets whose data holds secretMarker in every
// position a parser might quote: values, keys, anchors, names.
var secretLeaks = []string{
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: " + secretMarker + "!\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: [" + secretMarker + "]\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: " + secretMarker + "\n  key: " + secretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  " + secretMarker + ": 1\n  " + secretMarker + ": 2\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: *" + secretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: \"" + secretMarker + "\\q\"\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: '" + secretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: " + secretMarker + "\n    more: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n" + secretMarker + ": x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  " + secretMarker + "/bad: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  ? [" + secretMarker + "]\n  : x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + secretMarker + "\nstringData:\n  key: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  creationTimestamp: " + secretMarker + "\nstringData:\n  key: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: [" + secretMarker + "]\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nimmutable: " + secretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata: !!binary " + secretMarker + "\n",
	"apiVersion: v1\nkind: " + secretMarker + "\n---\nkind: Secret\ndata:\n  k: " + secretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: 12345" + secretMarker + "\n\x00",
}

func TestParseManifestSecretDataNotInErrors(t *testing.T) {
	for i, in := range secretLeaks {
		_, err := ParseManifest("secret.yaml", []byte(in))
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), secretMarker) {
			t.Errorf("case %d: error leaks secret data: %v", i, err)
		}
		if !strings.HasPrefix(err.Error(), "secret.yaml:") {
			t.Errorf("case %d: error does not name the file: %v", i, err)
		}
	}
}

// --- ManifestSource ---

type harness struct {
	t    *testing.T
	dir  string
	out  chan map[string][]byte
	logs *observer.ObservedLogs
	last map[string][]byte
}

// startSource runs a ManifestSource on dir until the test ends; tune, if
// given, adjusts it first.
func startSource(t *testing.T, dir string, tune ...func(*ManifestSource)) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	src := NewManifestSource(dir, zap.New(core))
	for _, f := range tune {
		f(src)
	}
	h := &harness{t: t, dir: dir, out: make(chan map[string][]byte), logs: logs}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		for _, e := range logs.All() {
			if strings.Contains(e.Message, secretMarker) || strings.Contains(fmt.Sprint(e.ContextMap()), secretMarker) {
				t.Errorf("log line leaks secret data: %s %v", e.Message, e.ContextMap())
			}
		}
	})
	return h
}

// next returns the next set sent, failing after 5 s.
func (h *harness) next() map[string][]byte {
	h.t.Helper()
	select {
	case set := <-h.out:
		h.last = set
		return set
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no object set within 5s; last %q", sortedKeys(h.last))
		return nil
	}
}

// waitFor reads sets until one satisfies ok, failing after 5 s. Editors and
// os.WriteFile write in steps, so intermediate sets may come first.
func (h *harness) waitFor(what string, ok func(map[string][]byte) bool) map[string][]byte {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case set := <-h.out:
			h.last = set
			if ok(set) {
				return set
			}
		case <-deadline:
			h.t.Fatalf("no object set with %s within 5s; last %q", what, sortedKeys(h.last))
			return nil
		}
	}
}

// quiet asserts that nothing is sent for d.
func (h *harness) quiet(d time.Duration) {
	h.t.Helper()
	select {
	case set := <-h.out:
		h.t.Fatalf("unexpected object set %q", sortedKeys(set))
	case <-time.After(d):
	}
}

// waitLog waits for a log entry with msg for file.
func (h *harness) waitLog(msg, file string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range h.logs.FilterMessage(msg).All() {
			if e.ContextMap()["file"] == file {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no log %q for %s", msg, file)
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// writeAtomic writes a temporary file and renames it over name, as editors
// and GitOps tools do.
func (h *harness) writeAtomic(name, content string) {
	h.t.Helper()
	tmp := filepath.Join(h.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func cmKey(name string) string { return bus.Key(bus.KindObject, "configmap", "default", name) }

// cmValue is data.value of the ConfigMap under key in set, "" if absent.
func cmValue(t *testing.T, set map[string][]byte, name string) string {
	t.Helper()
	js, ok := set[cmKey(name)]
	if !ok {
		return ""
	}
	var cm corev1.ConfigMap
	mustUnmarshal(t, js, &cm)
	return cm.Data["value"]
}

func TestManifestSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("a.yaml", configMap("a", "1"))
	h.write("b.yml", configMap("b", "1")+"---\n"+configMap("b2", "1"))
	h.write("notes.txt", configMap("ignored", "1"))
	h.write(".hidden.yaml", configMap("ignored", "1"))
	h.write("a.yaml~", configMap("ignored", "1"))
	h.write("a.yaml.swp", configMap("ignored", "1"))
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("sub.yaml/c.yaml", configMap("ignored", "1"))
	h = startSource(t, dir)

	set := h.next()
	if got, want := sortedKeys(set), []string{cmKey("a"), cmKey("b"), cmKey("b2")}; !slices.Equal(got, want) {
		t.Fatalf("initial set %q, want %q", got, want)
	}

	// Nothing changes: nothing is sent, even when files are touched or
	// ignored files change.
	h.write("notes.txt", "changed")
	h.writeAtomic("a.yaml", configMap("a", "1"))
	later := time.Now().Add(time.Hour)
	mustDo(t, os.Chtimes(filepath.Join(dir, "b.yml"), later, later))
	h.quiet(200 * time.Millisecond)

	// A new file adds its objects.
	h.write("c.yaml", configMap("c", "1"))
	h.waitFor("c", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "1" })

	// A modified file changes them.
	h.write("a.yaml", configMap("a", "2"))
	set = h.waitFor("a=2", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "2" })
	if len(set) != 4 {
		t.Errorf("set after modify: %q", sortedKeys(set))
	}

	// A broken file keeps its last good objects; the other files still work.
	h.writeAtomic("a.yaml", configMap("a", "3")+"  broken: [\n")
	h.waitLog("manifest file does not parse; keeping its last good objects", "a.yaml")
	h.write("b.yml", configMap("b", "2")+"---\n"+configMap("b2", "1"))
	set = h.waitFor("b=2", func(s map[string][]byte) bool { return cmValue(t, s, "b") == "2" })
	if cmValue(t, set, "a") != "2" || len(set) != 4 {
		t.Errorf("broken a.yaml did not keep its objects: a=%q, keys %q", cmValue(t, set, "a"), sortedKeys(set))
	}
	for _, e := range h.logs.FilterMessage("manifest file does not parse; keeping its last good objects").All() {
		if err, _ := e.ContextMap()["error"].(string); !strings.Contains(err, "a.yaml:") {
			t.Errorf("parse error log does not name the file and line: %v", e.ContextMap())
		}
	}

	// Fixing it brings the new objects.
	h.write("a.yaml", configMap("a", "4")+"---\n"+configMap("a2", "4"))
	h.waitFor("a=4, a2", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "4" && cmValue(t, s, "a2") == "4" })
	h.waitLog("manifest file parses again", "a.yaml")

	// An atomic rename over a file is picked up.
	h.writeAtomic("c.yaml", configMap("c", "2"))
	h.waitFor("c=2", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "2" })

	// A deleted file takes its objects along.
	if err := os.Remove(filepath.Join(dir, "b.yml")); err != nil {
		t.Fatal(err)
	}
	set = h.waitFor("b gone", func(s map[string][]byte) bool { _, ok := s[cmKey("b")]; return !ok })
	if _, ok := set[cmKey("b2")]; ok || len(set) != 3 {
		t.Errorf("after delete: %q", sortedKeys(set))
	}

	// So does one renamed to a name that is not read.
	if err := os.Rename(filepath.Join(dir, "c.yaml"), filepath.Join(dir, "c.yaml.bak")); err != nil {
		t.Fatal(err)
	}
	set = h.waitFor("c gone", func(s map[string][]byte) bool { _, ok := s[cmKey("c")]; return !ok })
	if got, want := sortedKeys(set), []string{cmKey("a"), cmKey("a2")}; !slices.Equal(got, want) {
		t.Errorf("after rename away: %q, want %q", got, want)
	}
}

func TestManifestSourceDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("10-base.yaml", configMap("shared", "base"))
	h.write("20-override.yaml", configMap("shared", "override"))
	h = startSource(t, dir)

	set := h.next()
	if got := cmValue(t, set, "shared"); got != "override" || len(set) != 1 {
		t.Fatalf("shared = %q (keys %q), want the lexically later file's", got, sortedKeys(set))
	}
	warned := false
	for _, e := range h.logs.FilterMessage("object defined twice; the later definition wins").All() {
		m := e.ContextMap()
		if m["key"] == cmKey("shared") && m["source"] == "20-override.yaml:1" && m["overrides"] == "10-base.yaml:1" {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning naming both files; logs: %v", h.logs.All())
	}

	// Removing the winner brings the other definition back.
	if err := os.Remove(filepath.Join(dir, "20-override.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("base", func(s map[string][]byte) bool { return cmValue(t, s, "shared") == "base" })
}

func TestManifestSourceSecretsStayOutOfLogs(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("s.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: "+secretMarker+"\n")
	h = startSource(t, dir)
	h.next()
	for i, leak := range secretLeaks {
		h.writeAtomic("s.yaml", leak)
		h.waitLog("manifest file does not parse; keeping its last good objects", "s.yaml")
		for _, e := range h.logs.TakeAll() {
			if strings.Contains(e.Message, secretMarker) || strings.Contains(fmt.Sprint(e.ContextMap()), secretMarker) {
				t.Errorf("case %d: log line leaks secret data: %s %v", i, e.Message, e.ContextMap())
			}
		}
	}
}

func TestManifestSourceConfigMapMount(t *testing.T) {
	// The layout the kubelet gives a ConfigMap volume: files are symlinks
	// through ..data, which is swapped atomically on update.
	dir := t.TempDir()
	mustDo(t, os.Mkdir(filepath.Join(dir, "..2026_01_01_00_00_00.1"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "..2026_01_01_00_00_00.1", "app.yaml"), []byte(configMap("app", "1")), 0o644))
	mustDo(t, os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")))
	mustDo(t, os.Symlink("..data/app.yaml", filepath.Join(dir, "app.yaml")))
	h := startSource(t, dir)
	if got := cmValue(t, h.next(), "app"); got != "1" {
		t.Fatalf("app = %q, want 1", got)
	}

	mustDo(t, os.Mkdir(filepath.Join(dir, "..2026_01_01_00_00_01.2"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "..2026_01_01_00_00_01.2", "app.yaml"), []byte(configMap("app", "2")), 0o644))
	mustDo(t, os.Symlink("..2026_01_01_00_00_01.2", filepath.Join(dir, "..data_tmp")))
	mustDo(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	mustDo(t, os.RemoveAll(filepath.Join(dir, "..2026_01_01_00_00_00.1")))
	h.waitFor("app=2", func(s map[string][]byte) bool { return cmValue(t, s, "app") == "2" })
}

func TestManifestSourceDirectoryReplaced(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "manifests")
	mustDo(t, os.Mkdir(dir, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(configMap("a", "1")), 0o644))
	h := startSource(t, dir)
	if got := cmValue(t, h.next(), "a"); got != "1" {
		t.Fatalf("a = %q", got)
	}

	// Build the new directory beside it and swap it in.
	next := filepath.Join(parent, "manifests.new")
	mustDo(t, os.Mkdir(next, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(next, "b.yaml"), []byte(configMap("b", "1")), 0o644))
	mustDo(t, os.Rename(dir, filepath.Join(parent, "manifests.old")))
	mustDo(t, os.Rename(next, dir))
	set := h.waitFor("b", func(s map[string][]byte) bool { return cmValue(t, s, "b") == "1" })
	if _, ok := set[cmKey("a")]; ok {
		t.Errorf("objects of the old directory kept: %q", sortedKeys(set))
	}

	// The new directory is watched.
	h.write("c.yaml", configMap("c", "1"))
	h.waitFor("c", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "1" })
}

func TestManifestSourceResyncBackstop(t *testing.T) {
	// A symlink to a file outside the directory: changes to the target make
	// no event in the watched directory, so only the periodic rescan sees them.
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "app.yaml")
	mustDo(t, os.WriteFile(target, []byte(configMap("app", "1")), 0o644))
	mustDo(t, os.Symlink(target, filepath.Join(dir, "app.yaml")))
	h := startSource(t, dir, func(s *ManifestSource) { s.resync = 100 * time.Millisecond })
	if got := cmValue(t, h.next(), "app"); got != "1" {
		t.Fatalf("app = %q, want 1", got)
	}
	mustDo(t, os.WriteFile(target, []byte(configMap("app", "2")), 0o644))
	h.waitFor("app=2", func(s map[string][]byte) bool { return cmValue(t, s, "app") == "2" })
}

func TestManifestSourceSkippedKindsLogged(t *testing.T) {
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "mixed.yaml"), []byte(
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\n"+
			"apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: old\n---\n"+configMap("a", "1")), 0o644))
	h := startSource(t, dir)
	if set := h.next(); len(set) != 1 || cmValue(t, set, "a") != "1" {
		t.Fatalf("set %q, want only the ConfigMap", sortedKeys(set))
	}
	var debug, warn bool
	for _, e := range h.logs.All() {
		m := e.ContextMap()
		switch {
		case e.Level == zapcore.DebugLevel && m["kind"] == "Deployment" && m["source"] == "mixed.yaml:1":
			debug = true
		case e.Level == zapcore.WarnLevel && m["kind"] == "Ingress" && m["source"] == "mixed.yaml:6":
			warn = true
		}
	}
	if !debug || !warn {
		t.Errorf("want a debug log for the Deployment and a warning for the old Ingress; logs: %v", h.logs.All())
	}
}

func TestManifestSourceMissingDirectory(t *testing.T) {
	src := NewManifestSource(filepath.Join(t.TempDir(), "nope"), zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := src.Run(ctx, make(chan map[string][]byte))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Run = %v, want a not-exist error", err)
	}

	file := filepath.Join(t.TempDir(), "file.yaml")
	mustDo(t, os.WriteFile(file, nil, 0o644))
	if err := NewManifestSource(file, nil).Run(ctx, make(chan map[string][]byte)); err == nil {
		t.Fatal("Run on a file: no error")
	}
}

func TestManifestSourceEmptyDirectory(t *testing.T) {
	h := startSource(t, t.TempDir())
	if set := h.next(); set == nil || len(set) != 0 {
		t.Fatalf("initial set %v, want an empty map", set)
	}
}

func TestManifestSourceSlowReceiver(t *testing.T) {
	// Changes made while nobody reads are folded into the newest set.
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("a.yaml", configMap("a", "0"))
	h = startSource(t, dir)
	for i := 1; i <= 5; i++ {
		h.writeAtomic("a.yaml", configMap("a", fmt.Sprint(i)))
		time.Sleep(30 * time.Millisecond)
	}
	h.waitFor("a=5", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "5" })
	h.quiet(100 * time.Millisecond)
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func objKeys(objs []Object) []string {
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
