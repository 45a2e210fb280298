package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/renderer"
	"switchyard.dev/switchyard/stages/translator"
)

// TestBenchIncremental measures, in process and side by side, what the
// translator and renderer cost for a change to one Ingress among N, against
// translating and rendering everything: the work must follow the change,
// not the size of the cluster.
func TestBenchIncremental(t *testing.T) {
	requireBench(t)
	n := scaleN(t)
	snap := scaleSnapshot(n, 9000)

	full := series{name: fmt.Sprintf("full translate + render, %d Ingresses", n)}
	for i := 0; i < 3; i++ {
		begin := time.Now()
		model := translator.Translate(translator.DefaultConfig(), snap)
		if _, errs := renderer.Render(renderer.DefaultConfig(), model); len(errs) > 0 {
			t.Fatal(errs)
		}
		full.samples = append(full.samples, time.Since(begin))
	}

	tr := translator.NewTranslator(translator.DefaultConfig())
	for _, objs := range [][]any{toAny(snap.IngressClasses), toAny(snap.Services), toAny(snap.EndpointSlices), toAny(snap.Ingresses)} {
		for _, o := range objs {
			tr.Set(o)
		}
	}
	rd := renderer.NewRenderer(renderer.DefaultConfig())
	feed(rd, tr.Flush())
	rd.Flush()

	one := series{name: "one Ingress changed: translate + render"}
	for i := 0; i < 50; i++ {
		ing := snap.Ingresses[(i*7919)%n].DeepCopy()
		prefix := networkingv1.PathTypePrefix
		ing.Spec.Rules[0].HTTP.Paths = append(ing.Spec.Rules[0].HTTP.Paths, networkingv1.HTTPIngressPath{
			Path: fmt.Sprintf("/v%d", i), PathType: &prefix, Backend: ing.Spec.Rules[0].HTTP.Paths[0].Backend})
		begin := time.Now()
		tr.Set(ing)
		delta := tr.Flush()
		feed(rd, delta)
		out, errs := rd.Flush()
		one.samples = append(one.samples, time.Since(begin))
		if len(errs) > 0 || len(out.Values) == 0 {
			t.Fatalf("change %d: %v, %d keys rendered", i, errs, len(out.Values))
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "\n%s\n%s\n%s\n", strings.Repeat("=", 100), full, one)
	fmt.Fprintf(&report, "ratio full / one change (median): %.0fx\n", float64(full.quantile(0.5))/float64(one.quantile(0.5)))
	fmt.Fprintf(&report, "targets: full render <= 1s (%v), one-Ingress change <= 50ms p99 (%v)\n",
		full.quantile(0.5) <= time.Second, one.quantile(0.99) <= 50*time.Millisecond)
	t.Log(report.String())
}

func toAny[T any](s []*T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// feed hands a translator delta to the renderer, as the bus would.
func feed(rd *renderer.Renderer, d translator.Delta) {
	for key, v := range d.Puts {
		switch o := v.(type) {
		case *bus.Server:
			rd.SetServer(key, o)
		case *bus.Backend:
			rd.SetBackend(o.Name, o)
		case *bus.Certificate:
			rd.SetCertificate(o.Namespace+"/"+o.Name, o)
		case *bus.Settings:
			rd.SetSettings(o)
		}
	}
	for _, key := range d.Deletes {
		kind, parts, _ := bus.SplitKey(key)
		switch kind {
		case bus.KindServer:
			rd.SetServer(key, nil)
		case bus.KindBackend:
			rd.SetBackend(parts[0], nil)
		}
	}
}
