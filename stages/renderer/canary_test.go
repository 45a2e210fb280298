package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestCanaryBackendFields: valid canary fields reach the Lua payload; a
// backend whose canary fields fail the check is served without them and
// reported.
func TestCanaryBackendFields(t *testing.T) {
	m := bus.NewModel()
	m.Backends["primary"] = &bus.Backend{Name: "primary", Endpoints: []bus.Endpoint{}, AlternativeBackends: []string{"next"}}
	m.Backends["next"] = &bus.Backend{Name: "next", Endpoints: []bus.Endpoint{},
		TrafficShapingPolicy: &bus.Canary{Weight: 5, WeightTotal: 10, Header: "X-Canary", HeaderPattern: `^v\d+$`}}
	m.Backends["bad-alt"] = &bus.Backend{Name: "bad-alt", Endpoints: []bus.Endpoint{}, AlternativeBackends: []string{"x;y"}}
	m.Backends["bad-policy"] = &bus.Backend{Name: "bad-policy", Endpoints: []bus.Endpoint{},
		TrafficShapingPolicy: &bus.Canary{Weight: 5, WeightTotal: 10, Cookie: "a;b"}}
	art, errs := Render(DefaultConfig(), m)
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "bad-alt") || !strings.Contains(errs[1].Error(), "bad-policy") {
		t.Fatalf("errors: %v", errs)
	}
	if b := art.Backends["primary"]; len(b.AlternativeBackends) != 1 {
		t.Errorf("primary lost its alternative: %+v", b)
	}
	if b := art.Backends["next"]; b.TrafficShapingPolicy == nil || b.TrafficShapingPolicy.HeaderPattern != `^v\d+$` {
		t.Errorf("canary lost its policy: %+v", b)
	}
	for _, name := range []string{"bad-alt", "bad-policy"} {
		b := art.Backends[name]
		if b == nil || b.AlternativeBackends != nil || b.TrafficShapingPolicy != nil {
			t.Errorf("%s: want served without canary fields, got %+v", name, b)
		}
	}
	// The input model is not changed by the renderer.
	if m.Backends["bad-alt"].AlternativeBackends == nil {
		t.Errorf("renderer modified its input")
	}
}
