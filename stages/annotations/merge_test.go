package annotations

import (
	"reflect"
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

// TestMergeCarriesEveryGroup: a feature group added to bus.Features but
// forgotten in mergeFeatures would be dropped between the plugins and the
// renderer without a word. Every field set in a plugin's result must
// arrive in the merged set.
func TestMergeCarriesEveryGroup(t *testing.T) {
	var full bus.Features
	v := reflect.ValueOf(&full).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("field %s of kind %s: teach this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	var merged bus.Features
	if err := mergeFeatures(&merged, &full); err != nil {
		t.Fatal(err)
	}
	m := reflect.ValueOf(merged)
	for i := range m.NumField() {
		if m.Field(i).IsZero() {
			t.Errorf("mergeFeatures drops %s", m.Type().Field(i).Name)
		}
	}
}
