package translator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"switchyard.dev/switchyard/bus"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden translates every testdata/*.yaml and compares the model with
// testdata/*.golden.json. Run with -update to accept new output.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	if len(inputs) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			if strings.Contains(name, "without-class") {
				cfg.WatchWithoutClass = true
			}
			if name == "default-backend-service" {
				cfg.DefaultBackendService = "default/fallback"
			}
			if name == "default-ssl-certificate" {
				cfg.DefaultSSLCertificate = "default/fallback"
			}
			if name == "class-by-name" {
				cfg.IngressClass, cfg.IngressClassByName = "nginx", true
			}
			if name == "catch-all-disabled" {
				cfg.DisableCatchAll = true
			}
			if name == "external-name-disabled" {
				cfg.DisableServiceExternalName = true
			}
			if name == "host-ownership-namespace" {
				cfg.HostOwnership = HostOwnershipNamespace
			}
			if name == "stream-services" {
				cfg.TCPServicesConfigMap, cfg.UDPServicesConfigMap = "ingress/tcp", "ingress/udp"
				cfg.ReservedPorts = map[int]string{8080: "--http-addr"}
			}
			got := encodeModel(t, Translate(cfg, loadSnapshot(t, in)))
			golden := strings.TrimSuffix(in, ".yaml") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("model differs from %s (rerun with -update if intended):\n%s", golden, got)
			}
		})
	}
}

// TestDeterministic translates the same objects in a different order and
// expects the same model.
func TestDeterministic(t *testing.T) {
	snap := loadSnapshot(t, "testdata/conflict.yaml")
	first := encodeModel(t, Translate(DefaultConfig(), snap))
	reverse(snap.Ingresses)
	reverse(snap.EndpointSlices)
	reverse(snap.Services)
	if second := encodeModel(t, Translate(DefaultConfig(), snap)); !bytes.Equal(first, second) {
		t.Fatalf("output depends on input order:\n%s\n---\n%s", first, second)
	}
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func encodeModel(t *testing.T, m bus.Model) []byte {
	t.Helper()
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// loadSnapshot reads a multi-document YAML file of Kubernetes objects.
func loadSnapshot(t *testing.T, path string) Snapshot {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var snap Snapshot
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		if string(js) == "null" {
			continue
		}
		var tm struct{ Kind string }
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		obj, err := bus.DecodeObject(strings.ToLower(tm.Kind), js)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		snap.Add(obj)
	}
	return snap
}

// TestSameSecondTieGoesAsInIngressNginx: Ingresses created in the same
// second (applied together) that claim one path are ordered as
// ingress-nginx orders them, the namespace/name sorting last first, so the
// same Ingress keeps the path after a move; the other is told.
func TestSameSecondTieGoesAsInIngressNginx(t *testing.T) {
	m := Translate(DefaultConfig(), loadSnapshot(t, "testdata/conflict.yaml"))
	server := m.Servers[bus.Key(bus.KindServer, "tie.example.com")]
	if server == nil {
		t.Fatal("no server for tie.example.com")
	}
	var served []string
	for _, l := range server.Locations {
		if l.Path == "/" {
			served = append(served, l.Ingress)
		}
	}
	if len(served) != 1 || served[0] != "zeta/same-age-z" {
		t.Errorf("/ of tie.example.com served by %v, want zeta/same-age-z (it sorts after ypsilon/same-age-y)", served)
	}
	info := m.Ingresses[bus.Key(bus.KindIngress, "ypsilon", "same-age-y")]
	if info == nil {
		t.Fatal("no info for ypsilon/same-age-y")
	}
	told := false
	for _, p := range info.Problems {
		told = told || (p.Reason == "PathConflict" && strings.Contains(p.Message, "older Ingress zeta/same-age-z"))
	}
	if !told {
		t.Errorf("ypsilon/same-age-y is not told it lost to zeta/same-age-z: %+v", info)
	}
}
