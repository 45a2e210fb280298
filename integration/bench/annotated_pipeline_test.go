package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/annotations"
	"switchyard.dev/switchyard/stages/renderer"
	"switchyard.dev/switchyard/stages/translator"
)

// fiveProxyAnnotations are the five proxy annotations TestBenchAnnotatedPipeline
// puts on every Ingress: the ones public Ingresses carry most.
var fiveProxyAnnotations = map[string]string{
	bus.DefaultAnnotationsPrefix + "/proxy-body-size":    "64m",
	bus.DefaultAnnotationsPrefix + "/proxy-read-timeout": "3600",
	bus.DefaultAnnotationsPrefix + "/proxy-send-timeout": "3600",
	bus.DefaultAnnotationsPrefix + "/proxy-buffer-size":  "16k",
	bus.DefaultAnnotationsPrefix + "/upstream-vhost":     "internal.example.com",
}

// TestBenchAnnotatedPipeline measures a full translate, annotate and render
// of N Ingresses (10,000 by default) that each carry five proxy
// annotations, as on a controller's start: the translator and renderer in
// process, the annotations through the real built-in proxy plugin process,
// and every hand-over encoded as JSON as the bus carries it. Target (issue
// 13): <= 1 s.
func TestBenchAnnotatedPipeline(t *testing.T) {
	requireBench(t)
	n := scaleN(t)
	snap := scaleSnapshot(n, 9000)
	for _, ing := range snap.Ingresses {
		ing.Annotations = fiveProxyAnnotations
	}
	bin := harness.Binary(t)
	host := annotations.NewHost(annotations.HostConfig{Prefix: bus.DefaultAnnotationsPrefix, Sources: []annotations.PluginSource{
		{Name: "builtin proxy", Command: func() *exec.Cmd { return exec.Command(bin, "plugin", "proxy") }},
	}}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	owners := host.Start(ctx)
	t.Cleanup(func() { cancel(); host.Wait() })
	if got := len(host.Plugins()); got != 1 {
		t.Fatalf("%d plugins running, want the proxy plugin", got)
	}

	var translated, annotated, rendered series
	translated.name, annotated.name, rendered.name = "translate + encode", "annotate (proxy plugin)", "render"
	total := series{name: fmt.Sprintf("full translate + annotate + render, %d Ingresses with 5 annotations each", n)}
	for range 3 {
		begin := time.Now()
		tr := translator.NewTranslator(translator.DefaultConfig())
		for _, objs := range [][]any{toAny(snap.IngressClasses), toAny(snap.Services), toAny(snap.EndpointSlices), toAny(snap.Ingresses)} {
			for _, o := range objs {
				tr.Set(o)
			}
		}
		puts := encodeValues(t, tr.Flush().Puts)
		t1 := time.Now()
		out, err := host.NewAnnotator(owners).Update(ctx, puts)
		if err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		files, errs := renderer.NewRenderer(renderer.DefaultConfig()).Update(out.Puts, out.Deletes)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t3 := time.Now()
		translated.samples = append(translated.samples, t1.Sub(begin))
		annotated.samples = append(annotated.samples, t2.Sub(t1))
		rendered.samples = append(rendered.samples, t3.Sub(t2))
		total.samples = append(total.samples, t3.Sub(begin))
		checkFiveAnnotations(t, files, n)
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\n%s\n  %s\n  %s\n  %s\n", strings.Repeat("=", 100), total, translated, annotated, rendered)
	fmt.Fprintf(&rep, "target: full translate + annotate + render <= 1s (median): %s\n", met(total.quantile(0.5) <= time.Second))
	t.Log(rep.String())
}

// encodeValues is what the bus does with a stage's output: one JSON value
// per key.
func encodeValues(t *testing.T, values map[string]any) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte, len(values))
	for k, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = data
	}
	return out
}

// checkFiveAnnotations fails unless the last Ingress's server file carries
// what its annotations ask: the numbers are of real work.
func checkFiveAnnotations(t *testing.T, files bus.Output, n int) {
	t.Helper()
	file := "servers/" + strings.ReplaceAll(scaleHost(n-1), ".", "_2e") + ".conf"
	rendered, ok := files.Values[bus.Key(bus.KindFile, file)].(bus.RenderedFile)
	if !ok {
		t.Fatalf("%s not rendered (%d files)", file, len(files.Values))
	}
	conf := rendered.Content
	for _, want := range []string{"client_max_body_size 64m;", "proxy_read_timeout 3600s;", "proxy_send_timeout 3600s;",
		"proxy_buffer_size 16k;", `set $switchyard_upstream_vhost "internal.example.com";`} {
		if !strings.Contains(conf, want) {
			t.Fatalf("%s lacks %q:\n%s", file, want, conf)
		}
	}
}
