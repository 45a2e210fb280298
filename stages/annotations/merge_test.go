package annotations

import (
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestRateLimitMergeConflict(t *testing.T) {
	f := &bus.Features{RateLimit: &bus.RateLimit{RPS: 1}}
	if err := mergeFeatures(f, &bus.Features{RateLimit: &bus.RateLimit{RPM: 1}}); err == nil {
		t.Fatal("two plugins setting rateLimit merged")
	}
	g := &bus.Features{}
	if err := mergeFeatures(g, &bus.Features{RateLimit: &bus.RateLimit{RPM: 1}}); err != nil || g.RateLimit == nil || g.RateLimit.RPM != 1 {
		t.Fatalf("merge into empty: %v %+v", err, g.RateLimit)
	}
}

func TestCanaryMergeConflict(t *testing.T) {
	f := &bus.Features{Canary: &bus.Canary{WeightTotal: 100}}
	if err := mergeFeatures(f, &bus.Features{Canary: &bus.Canary{WeightTotal: 10}}); err == nil {
		t.Fatal("two plugins setting canary were not refused")
	}
}
