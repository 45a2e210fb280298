package manifest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/manifest/manifesttest"
)

func TestParseManifestAllKinds(t *testing.T) {
	data, err := os.ReadFile("testdata/all-kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, skipped, err := Parse("all-kinds.yaml", data)
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
	if len(skipped) != 1 || skipped[0].Kind != "Deployment" || skipped[0].Source != "all-kinds.yaml:66" || skipped[0].KnownKind {
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
	objs, err := parseObjects("keys.yaml", []byte(`
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
			objs, err := parseObjects("f.yaml", []byte(tc.in))
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
	objs, err := parseObjects("f.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"))
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
	objs, err := parseObjects("s.yaml", []byte(`apiVersion: v1
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
	objs, err = parseObjects("s.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData: {a: b}\n"))
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
			[]string{"file.yaml:8:", "Service default/web: unknown field in spec.ports[0]"}},
		{"unknown top-level field", svc + "spce: {}\n", []string{"file.yaml:5:", "unknown field at the top level"}},
		{"field names are case-sensitive", "apiVersion: v1\nkind: ConfigMap\nMetadata:\n  name: a\n",
			[]string{"file.yaml:3:", "unknown field"}},
		{"unknown field in the second list item", svc + "spec:\n  ports:\n  - port: 80\n  - port: 81\n    nme: x\n",
			[]string{"file.yaml:9:", "unknown field in spec.ports[1]"}},
		{"wrong type", svc + "spec:\n  ports:\n  - port: eighty\n", []string{"file.yaml:7:", "Service default/web: wrong type in spec.ports[0].port: got a string, want a number"}},
		{"duplicate key", svc + "metadata:\n  name: other\n", []string{"file.yaml:5:", "duplicate key"}},
		{"duplicate scalar key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: '1'\n  y: '2'\n  x: '3'\n", []string{"file.yaml:8:", "duplicate key"}},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n", []string{"file.yaml:3:", "metadata.name is missing"}},
		{"missing metadata", "\n\napiVersion: v1\nkind: ConfigMap\n", []string{"file.yaml:3:", "metadata.name is missing"}},
		{"generateName only", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n", []string{"file.yaml:4:", "generateName"}},
		{"invalid name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_Valid\n", []string{"file.yaml:4: ConfigMap: metadata.name is invalid", "RFC 1123"}},
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
			objs, err := parseObjects("file.yaml", []byte(tc.in))
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

// TestParseManifestDocumentErrors: every document that does not parse is
// reported, each with the object's kind and namespace/name when they can be
// read, and the whole field path.
func TestParseManifestDocumentErrors(t *testing.T) {
	in := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
spec:
  rules:
  - host: a.example
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: eighty
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ok
---
apiVersion: v1
kind: Service
metadata:
  name: Not_A_Name
spec:
  ports:
  - port: 80
    targetPrt: 8080
---
kind: ConfigMap
`
	objs, err := parseObjects("ing.yaml", []byte(in))
	if objs != nil {
		t.Errorf("objects returned with an error: %q", objKeys(objs))
	}
	got := DocumentErrors(err)
	want := []DocumentError{
		{File: "ing.yaml", Line: 17, Kind: "Ingress", Namespace: "shop", Name: "web",
			Field:   "spec.rules[0].http.paths[0].backend.service.port.number",
			Message: "wrong type in spec.rules[0].http.paths[0].backend.service.port.number: got a string, want a number"},
		// An invalid name could be any text: not shown.
		{File: "ing.yaml", Line: 31, Kind: "Service", Field: "spec.ports[0]", Message: "unknown field in spec.ports[0]"},
		{File: "ing.yaml", Line: 33, Message: "apiVersion is missing"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d document errors (%v), want %d", len(got), err, len(want))
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Errorf("error %d:\n got %+v\nwant %+v", i, *got[i], want[i])
		}
	}
	if s := got[0].Error(); s != "ing.yaml:17: Ingress shop/web: wrong type in spec.rules[0].http.paths[0].backend.service.port.number: got a string, want a number" {
		t.Errorf("Error() = %q", s)
	}
}

func TestParseManifestSecretDataNotInErrors(t *testing.T) {
	for i, in := range manifesttest.SecretLeaks {
		_, err := parseObjects("secret.yaml", []byte(in))
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), manifesttest.SecretMarker) {
			t.Errorf("case %d: error leaks secret data: %v", i, err)
		}
		if !strings.HasPrefix(err.Error(), "secret.yaml:") {
			t.Errorf("case %d: error does not name the file: %v", i, err)
		}
	}
}

// parseObjects is Parse for tests that do not look at skipped documents.
func parseObjects(name string, data []byte) ([]Object, error) {
	objs, _, err := Parse(name, data)
	return objs, err
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func objKeys(objs []Object) []string {
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}
