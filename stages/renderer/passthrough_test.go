package renderer

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/templates"
)

// TestPassthroughFollowsEndpoints: an endpoint change of a passthrough
// backend publishes the host's endpoints and leaves the stream file as it
// was (no reload); a terminated host's endpoint change publishes nothing
// of passthrough; a backend without endpoints publishes none, which closes
// the host's connections, and is reported; a host no longer passed
// through is deleted.
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
	stream := streamText(t, out)
	if got := passthroughValue(t, out, "argocd.example.com"); !slices.Equal(got, []string{"10.0.0.4:8080", "10.0.0.5:8080"}) {
		t.Fatalf("first render: argocd endpoints %v", got)
	}
	if strings.Contains(stream, "10.0.0.5") || !strings.Contains(stream, `"argocd.example.com" "switchyard_passthrough";`) {
		t.Fatalf("the stream file holds endpoints, or lacks the host:\n%s", stream)
	}

	web := *m.Backends["backend.default-web-80"]
	web.Endpoints = []bus.Endpoint{{Address: "10.0.1.2", Port: "8080"}}
	out, errs = r.Update(map[string][]byte{"backend.default-web-80": mustJSON(t, &web)}, nil)
	if len(errs) > 0 || out.Values[fileKey(StreamFile)] != nil || len(passthroughKeys(out)) > 0 {
		t.Fatalf("a terminated host's endpoint change touched passthrough (errors %v)", errs)
	}

	argo := *m.Backends["backend.argocd-argocd-server-443"]
	argo.Endpoints = []bus.Endpoint{{Address: "10.0.0.9", Port: "8443"}, {Address: "fd00::9", Port: "8443"}}
	out, errs = r.Update(map[string][]byte{"backend.argocd-argocd-server-443": mustJSON(t, &argo)}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := passthroughValue(t, out, "argocd.example.com"); !slices.Equal(got, []string{"10.0.0.9:8443", "[fd00::9]:8443"}) {
		t.Fatalf("endpoint change: argocd endpoints %v", got)
	}
	if keys := passthroughKeys(out); len(keys) != 1 {
		t.Fatalf("published %v, want argocd's endpoints alone", keys)
	}
	if text := streamText(t, out); text != stream {
		t.Fatalf("an endpoint change changed the stream file:\n%s", text)
	}

	argo.Endpoints = nil
	out, errs = r.Update(map[string][]byte{"backend.argocd-argocd-server-443": mustJSON(t, &argo)}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no ready endpoint") {
		t.Fatalf("no endpoints: errors %v", errs)
	}
	if got := passthroughValue(t, out, "argocd.example.com"); len(got) != 0 {
		t.Fatalf("no endpoints: published %v", got)
	}

	out, _ = r.Update(nil, []string{"server.vault_2eexample_2ecom"})
	if !slices.Contains(out.Deletes, passthroughKey("vault.example.com")) || strings.Contains(streamText(t, out), "vault") {
		t.Fatalf("vault no longer passed through: deletes %v", out.Deletes)
	}
}

// passthroughValue is the endpoints out publishes for host.
func passthroughValue(t *testing.T, out bus.Output, host string) []string {
	t.Helper()
	v, ok := out.Values[passthroughKey(host)].(*bus.PassthroughEndpoints)
	if !ok || v.Host != host {
		t.Fatalf("no endpoints published for %s: %#v", host, out.Values[passthroughKey(host)])
	}
	return v.Endpoints
}

// passthroughKeys are the passthrough keys out puts.
func passthroughKeys(out bus.Output) []string {
	var keys []string
	for key := range out.Values {
		if strings.HasPrefix(key, bus.KindPassthrough+".") {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestPassthroughRefusesBadEndpoints: an endpoint that is not an IP and a
// port leaves the host out of the stream file and its endpoints
// unpublished, reported.
func TestPassthroughRefusesBadEndpoints(t *testing.T) {
	for _, ep := range []bus.Endpoint{
		{Address: "10.0.0.1;", Port: "80"}, {Address: "evil.example.com", Port: "80"},
		{Address: "10.0.0.1", Port: "0"}, {Address: "10.0.0.1", Port: "80;"}, {Address: "fe80::1%eth0", Port: "80"},
	} {
		if _, err := passthroughEndpoints([]bus.Endpoint{ep}); err == nil {
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
	if art.Passthrough["vault.example.com"] != nil || art.Passthrough["argocd.example.com"] == nil {
		t.Fatalf("endpoints published for %v", slices.Sorted(maps.Keys(art.Passthrough)))
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
// error, nothing that could end a quoted string or a directive is ever
// written from them, and the endpoints published name a valid host and
// hold only "ip:port".
func FuzzPassthroughStream(f *testing.F) {
	f.Add("pass.example.com", "ns-svc-443", "10.0.0.1", "443")
	f.Add("*.example.com", "ns-svc-443", "fd00::1", "8443")
	f.Add("pass.example.com", "ns svc", "10.0.0.1;", "1\"")
	f.Fuzz(func(t *testing.T, host, backend, address, port string) {
		r := NewRenderer(passthroughConfig())
		r.SetServer("server.x", &bus.Server{Hostname: host, SSLPassthrough: true, PassthroughBackend: backend,
			Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: backend}}})
		r.SetBackend(backend, &bus.Backend{Name: backend, Endpoints: []bus.Endpoint{{Address: address, Port: port}}})
		text, endpoints, _ := r.renderStream()
		valid := bus.ValidPassthroughHost(host) && backendNamePattern.MatchString(backend)
		if !valid && (len(endpoints) > 0 || strings.Contains(text, `"switchyard_passthrough";`)) {
			t.Fatalf("host %q with backend %q rendered:\n%s", host, backend, text)
		}
		for _, e := range endpoints {
			// The applier names a file after the host; the script reads
			// the endpoints.
			if !bus.ValidPassthroughHost(e.Host) {
				t.Fatalf("endpoints published for host %q", e.Host)
			}
			for _, ep := range e.Endpoints {
				if !bus.PassthroughEndpointPattern.MatchString(ep) {
					t.Fatalf("endpoint %q published", ep)
				}
			}
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

// TestPassthroughScriptChecksLikeTheBus: the script checks SNI names and
// endpoint lines against the very patterns the renderer and the applier
// hold them to.
func TestPassthroughScriptChecksLikeTheBus(t *testing.T) {
	for name, pattern := range map[string]string{"HOST": bus.PassthroughHostPattern.String(), "ENDPOINT": bus.PassthroughEndpointPattern.String()} {
		if line := "var " + name + " = /" + pattern + "/;"; !strings.Contains(templates.PassthroughJS, line) {
			t.Errorf("templates/passthrough.js lacks %s", line)
		}
	}
}
