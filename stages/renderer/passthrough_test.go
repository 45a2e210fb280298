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
	if !strings.Contains(art.Files[ServerFile("argocd.example.com")], "listen "+bus.PlaceholderHTTPSAddr+" ssl") {
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

// FuzzPassthroughStream: whatever a passthrough server's host, backend and
// endpoints hold, the stream file is rendered or the host left out with an
// error, and nothing that could end a quoted string or a directive is ever
// written from them.
func FuzzPassthroughStream(f *testing.F) {
	f.Add("pass.example.com", "ns-svc-443", "10.0.0.1", "443")
	f.Add("*.example.com", "ns-svc-443", "fd00::1", "8443")
	f.Add("pass.example.com", "ns svc", "10.0.0.1;", "1\"")
	f.Fuzz(func(t *testing.T, host, backend, address, port string) {
		r := NewRenderer(passthroughConfig())
		r.SetServer("server.x", &bus.Server{Hostname: host, SSLPassthrough: true, PassthroughBackend: backend,
			Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: backend}}})
		r.SetBackend(backend, &bus.Backend{Name: backend, Endpoints: []bus.Endpoint{{Address: address, Port: port}}})
		text, _ := r.renderStream()
		valid := hostPattern.MatchString(host) && !strings.HasPrefix(host, "*.") && backendNamePattern.MatchString(backend)
		if !valid && strings.Contains(text, "switchyard_pass_") {
			t.Fatalf("host %q with backend %q rendered:\n%s", host, backend, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if strings.Count(line, `"`)%2 != 0 || strings.ContainsAny(line, "\\\x00\r") || strings.Count(line, ";") > 1 {
				t.Fatalf("unsafe line %q", line)
			}
		}
	})
}

// TestPassthroughRefusedIngress: when NGINX refuses a line of the Ingress
// that asked for passthrough (its "# source" comment in the stream file),
// its host is terminated until the Ingress changes; the others stay.
func TestPassthroughRefusedIngress(t *testing.T) {
	m := harness.ReadModel(t, "testdata/passthrough.model.json")
	vault := m.Servers["server.vault_2eexample_2ecom"]
	vault.Locations = append(vault.Locations, bus.Location{Path: "/ui", PathType: bus.PathPrefix, Backend: "vault-vault-8200", Ingress: "vault/ui"})
	r := NewRenderer(passthroughConfig())
	for key, s := range m.Servers {
		r.SetServer(key, s)
	}
	for _, b := range m.Backends {
		r.SetBackend(b.Name, b)
	}
	rev := r.ingressRev("vault/vault", "server.vault_2eexample_2ecom")
	ref := &bus.Refusal{Kind: bus.RefusedIngress, Name: "vault/vault", Rev: rev, Message: "refused"}
	r.SetRefusal(ref.Key(), ref)
	out, errs := r.Flush()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	text := streamText(t, out)
	if strings.Contains(text, "vault.example.com") || !strings.Contains(text, "argocd.example.com") {
		t.Fatalf("stream file after the refusal:\n%s", text)
	}
}
