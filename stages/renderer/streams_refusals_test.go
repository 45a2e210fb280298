package renderer

import (
	"fmt"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestServicesRefusals: a refusal of a services entry at its current
// revision leaves that entry's server out (reported with its ConfigMap and
// key) and is listed in nginx.conf; a stale one, or one whose entry
// changed (other than its endpoints), changes nothing.
func TestServicesRefusals(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StreamServices = true
	m := harness.ReadModel(t, "testdata/stream-services.model.json")
	entry := m.Streams.TCP[0]
	name := serviceSourceName(bus.ProtocolTCP, entry.Port)
	rev := serviceRev(bus.ProtocolTCP, entry)
	base, errs := Render(cfg, m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	source := "# source services " + name + " rev=" + rev
	if !strings.Contains(base.Files[ServicesFile], source) {
		t.Fatalf("no %q in\n%s", source, base.Files[ServicesFile])
	}
	// The model says disable-ipv6: the listens leave the IPv6 hosts out.
	host := bus.ListenPlaceholder(bus.PlaceholderHTTPHost, m.Settings.DisableIPv6)
	listen := fmt.Sprintf("listen %s:%d ", host, entry.Port)
	refusal := func(rev string) map[string]*bus.Refusal {
		ref := &bus.Refusal{Kind: bus.RefusedServices, Name: name, Rev: rev, Message: "bind() to 127.0.0.1:5432 failed"}
		return map[string]*bus.Refusal{ref.Key(): ref}
	}

	art, errs := RenderRefused(cfg, m, refusal(rev))
	if strings.Contains(art.Files[ServicesFile], listen) {
		t.Error("the refused entry is still rendered")
	}
	if !strings.Contains(art.Files[MainFile], "# refused services "+name+" rev="+rev) {
		t.Error("nginx.conf does not list the refusal it honours")
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "ConfigMap ingress/tcp, key 5432") {
		t.Errorf("errors %v, want one naming the ConfigMap and key", errs)
	}
	for _, other := range m.Streams.TCP[1:] {
		if !strings.Contains(art.Files[ServicesFile], fmt.Sprintf("listen %s:%d ", host, other.Port)) {
			t.Errorf("entry %d left out too", other.Port)
		}
	}
	nginxTestArchive(t, archive(t, art))

	// New endpoints: the same entry, still refused.
	m.Streams.TCP[0].Endpoints = []bus.Endpoint{{Address: "10.0.0.9", Port: "1"}}
	if art, _ := RenderRefused(cfg, m, refusal(rev)); strings.Contains(art.Files[ServicesFile], listen) {
		t.Error("an endpoint change brought a refused entry back")
	}
	// Another Service: a new entry, tried again.
	m.Streams.TCP[0].Service.Name = "other"
	if art, _ := RenderRefused(cfg, m, refusal(rev)); !strings.Contains(art.Files[ServicesFile], listen) {
		t.Error("a changed entry is still refused")
	}
	if art, _ := RenderRefused(cfg, m, refusal("000000000000")); !strings.Contains(art.Files[ServicesFile], listen) {
		t.Error("a stale refusal left the entry out")
	}
}
