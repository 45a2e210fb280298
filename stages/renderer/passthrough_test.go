package renderer

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestPassthroughFollowsEndpoints: the stream file is rendered again when
// an endpoint of a passthrough backend changes, and only then; a backend
// without endpoints closes the host's connections and is reported.
func TestPassthroughFollowsEndpoints(t *testing.T) {
	m := harness.ReadModel(t, "testdata/passthrough.model.json")
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRenderer(passthroughConfig())
	out, errs := r.Update(entries, nil)
	if len(errs) > 0 {
		t.Fatalf("whole table: %v", errs)
	}
	if !strings.Contains(streamText(t, out), `server "10.0.0.5:8080";`) {
		t.Fatal("first render lacks the passthrough endpoint")
	}

	web := *m.Backends["backend.default-web-80"]
	web.Endpoints = []bus.Endpoint{{Address: "10.0.1.2", Port: "8080"}}
	out, errs = r.Update(map[string][]byte{"backend.default-web-80": mustJSON(t, &web)}, nil)
	if len(errs) > 0 || out.Values[fileKey(StreamFile)] != nil {
		t.Fatalf("a terminated host's endpoint change rendered the stream file (errors %v)", errs)
	}

	argo := *m.Backends["backend.argocd-argocd-server-443"]
	argo.Endpoints = []bus.Endpoint{{Address: "10.0.0.9", Port: "8443"}}
	out, errs = r.Update(map[string][]byte{"backend.argocd-argocd-server-443": mustJSON(t, &argo)}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	text := streamText(t, out)
	if !strings.Contains(text, `server "10.0.0.9:8443";`) || strings.Contains(text, "10.0.0.5") {
		t.Fatalf("endpoint change not rendered:\n%s", text)
	}

	argo.Endpoints = nil
	out, errs = r.Update(map[string][]byte{"backend.argocd-argocd-server-443": mustJSON(t, &argo)}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no ready endpoint") {
		t.Fatalf("no endpoints: errors %v", errs)
	}
	if text := streamText(t, out); !strings.Contains(text, `"argocd.example.com" "switchyard_passthrough_none";`) {
		t.Fatalf("host without endpoints not closed:\n%s", text)
	}
}

// TestPassthroughRefusesBadEndpoints: an endpoint that is not an IP and a
// port leaves the host out of the stream file, reported.
func TestPassthroughRefusesBadEndpoints(t *testing.T) {
	for _, ep := range []bus.Endpoint{
		{Address: "10.0.0.1;", Port: "80"}, {Address: "evil.example.com", Port: "80"},
		{Address: "10.0.0.1", Port: "0"}, {Address: "10.0.0.1", Port: "80;"}, {Address: "fe80::1%eth0", Port: "80"},
	} {
		if _, err := streamServers([]bus.Endpoint{ep}); err == nil {
			t.Errorf("%+v accepted", ep)
		}
	}
	m := harness.ReadModel(t, "testdata/passthrough.model.json")
	m.Backends["backend.vault-vault-8200"].Endpoints = []bus.Endpoint{{Address: "10.0.0.1\"", Port: "80"}}
	art, errs := Render(passthroughConfig(), m)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "vault.example.com") {
		t.Fatalf("errors %v", errs)
	}
	if strings.Contains(art.Files[StreamFile], "vault") || !strings.Contains(art.Files[StreamFile], "argocd.example.com") {
		t.Fatalf("stream file:\n%s", art.Files[StreamFile])
	}
}

// TestNoPassthroughWithoutFlag: without --enable-ssl-passthrough nothing
// of the stream module is rendered, whatever the model says.
func TestNoPassthroughWithoutFlag(t *testing.T) {
	art, errs := Render(DefaultConfig(), harness.ReadModel(t, "testdata/passthrough.model.json"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, ok := art.Files[StreamFile]; ok || strings.Contains(art.Files[MainFile], "stream {") {
		t.Fatal("stream configuration rendered without the flag")
	}
	if !strings.Contains(art.Files[ServerFile("argocd.example.com")], "listen 127.0.0.1:8443 ssl") {
		t.Fatal("TLS listener moved without the flag")
	}
}

func streamText(t *testing.T, out bus.Output) string {
	t.Helper()
	f, ok := out.Values[fileKey(StreamFile)].(bus.RenderedFile)
	if !ok {
		t.Fatal("the stream file was not rendered")
	}
	return f.Content
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
