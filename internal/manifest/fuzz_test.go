package manifest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/manifest/manifesttest"
)

// FuzzParseManifest checks that ParseManifest never panics, that its errors
// name the file and never quote Secret data, and that what it accepts is
// well-formed.
func FuzzParseManifest(f *testing.F) {
	allKinds, err := os.ReadFile("testdata/all-kinds.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(allKinds)
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\n  namespace: web\ntype: kubernetes.io/tls\n" +
		"data:\n  tls.crt: " + manifesttest.SecretMarker + "\nstringData:\n  tls.key: " + manifesttest.SecretMarker + "\n  " + manifesttest.SecretMarker + ": x\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: " + manifesttest.SecretMarker + "}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: &a " + manifesttest.SecretMarker + "\n  j: *a\n"))
	f.Add([]byte("--- {apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: '" + manifesttest.SecretMarker + "'}}\n...\n"))
	for _, leak := range manifesttest.SecretLeaks {
		f.Add([]byte(leak))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := parseObjects("fuzz.yaml", data)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, manifesttest.SecretMarker) {
				t.Fatalf("error quotes secret data: %s", msg)
			}
			if !strings.HasPrefix(msg, "fuzz.yaml:") {
				t.Fatalf("error does not name the file: %s", msg)
			}
			if objs != nil {
				t.Fatalf("objects returned with an error")
			}
			return
		}
		for _, o := range objs {
			kind, parts, err := bus.SplitKey(o.Key)
			if err != nil || kind != bus.KindObject || len(parts) != 3 || parts[2] == "" {
				t.Fatalf("bad key %q: %v", o.Key, err)
			}
			if !strings.HasPrefix(o.Source, "fuzz.yaml:") {
				t.Fatalf("bad source %q", o.Source)
			}
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := json.Unmarshal(o.JSON, &tm); err != nil || tm.APIVersion == "" || tm.Kind == "" {
				t.Fatalf("bad JSON for %s: %v", o.Key, err)
			}
			if _, ok := manifestKinds[[2]string{tm.APIVersion, tm.Kind}]; !ok {
				t.Fatalf("%s: unsupported kind %s/%s accepted", o.Key, tm.APIVersion, tm.Kind)
			}
			// Parsing the canonical JSON (valid YAML) again gives the same object.
			again, err := parseObjects("fuzz.yaml", o.JSON)
			if err != nil || len(again) != 1 || again[0].Key != o.Key || string(again[0].JSON) != string(o.JSON) {
				t.Fatalf("%s does not round-trip: %v", o.Key, err)
			}
		}
	})
}
