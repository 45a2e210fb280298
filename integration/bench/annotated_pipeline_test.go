package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/cputime"
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
	// The same phases in CPU time of this process (the plugin process's
	// left out), which a loaded machine inflates far less than wall time.
	cpuTranslated, cpuAnnotated, cpuRendered := series{name: "CPU: translate + encode"},
		series{name: "CPU: annotate, host side"}, series{name: "CPU: render"}
	var last *annotatedPipeline
	for range 3 {
		last = newAnnotatedPipeline(host.NewAnnotator(owners))
		begin, cpu0 := time.Now(), cputime.Process()
		puts := last.translate(t, snap)
		t1, cpu1 := time.Now(), cputime.Process()
		out := last.annotate(ctx, t, puts)
		t2, cpu2 := time.Now(), cputime.Process()
		files := last.render(t, out)
		t3, cpu3 := time.Now(), cputime.Process()
		translated.samples = append(translated.samples, t1.Sub(begin))
		annotated.samples = append(annotated.samples, t2.Sub(t1))
		rendered.samples = append(rendered.samples, t3.Sub(t2))
		total.samples = append(total.samples, t3.Sub(begin))
		cpuTranslated.samples = append(cpuTranslated.samples, cpu1-cpu0)
		cpuAnnotated.samples = append(cpuAnnotated.samples, cpu2-cpu1)
		cpuRendered.samples = append(cpuRendered.samples, cpu3-cpu2)
		checkFiveAnnotations(t, files, n)
	}
	change := measureOneChange(ctx, t, last, snap.Ingresses[n/2])
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\n%s\n  %s\n  %s\n  %s\n  %s\n  %s\n  %s\n%s\n", strings.Repeat("=", 100), total, translated, annotated, rendered,
		cpuTranslated, cpuAnnotated, cpuRendered, change)
	fmt.Fprintf(&rep, "target: full translate + annotate + render <= 1s (median): %s\n", met(total.quantile(0.5) <= time.Second))
	t.Log(rep.String())
}

// annotatedPipeline is the translator, annotator and renderer of one run,
// kept so that a change after the first full run is measured alone.
type annotatedPipeline struct {
	tr  *translator.Translator
	ann *annotations.Annotator
	ren *renderer.Renderer
}

func newAnnotatedPipeline(ann *annotations.Annotator) *annotatedPipeline {
	return &annotatedPipeline{
		tr:  translator.NewTranslator(translator.DefaultConfig()),
		ann: ann,
		ren: renderer.NewRenderer(renderer.DefaultConfig()),
	}
}

// translate sets the snapshot's objects, flushes, and encodes the change.
func (p *annotatedPipeline) translate(t *testing.T, snap translator.Snapshot) map[string][]byte {
	for _, objs := range [][]any{toAny(snap.IngressClasses), toAny(snap.Services), toAny(snap.EndpointSlices), toAny(snap.Ingresses)} {
		for _, o := range objs {
			p.tr.Set(o)
		}
	}
	return encodeValues(t, p.tr.Flush().Puts)
}

func (p *annotatedPipeline) annotate(ctx context.Context, t *testing.T, puts map[string][]byte) bus.Output {
	out, err := p.ann.Update(ctx, puts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (p *annotatedPipeline) render(t *testing.T, out bus.Output) bus.Output {
	files, errs := p.ren.Update(out.Puts, out.Deletes)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return files
}

// measureOneChange changes one Ingress's proxy-read-timeout among the N the
// pipeline holds, 20 times, and times translate + annotate of that change
// alone (what a controller does for one edited Ingress), checking each
// time that the change is its server, its Ingress and at most its backend
// (which the bus writer drops as unchanged).
func measureOneChange(ctx context.Context, t *testing.T, p *annotatedPipeline, ing *networkingv1.Ingress) series {
	s := series{name: "one Ingress changed: translate + annotate"}
	for i := range 20 {
		changed := ing.DeepCopy()
		changed.Generation = int64(i + 2)
		changed.Annotations = maps.Clone(ing.Annotations)
		changed.Annotations[bus.DefaultAnnotationsPrefix+"/proxy-read-timeout"] = strconv.Itoa(100 + i)
		begin := time.Now()
		p.tr.Set(changed)
		puts := encodeValues(t, p.tr.Flush().Puts)
		out := p.annotate(ctx, t, puts)
		s.samples = append(s.samples, time.Since(begin))
		server := bus.Key(bus.KindServer, ing.Spec.Rules[0].Host)
		if _, ok := out.Puts[server]; !ok || len(out.Puts) > 3 {
			t.Fatalf("change %d: annotated puts %v, want %s, its Ingress and backend", i, slices.Collect(maps.Keys(out.Puts)), server)
		}
	}
	return s
}

// encodeValues is what the bus does with a stage's output: one JSON value
// per key (bus.EncodeValues, which the writer calls a chunk at a time).
func encodeValues(t *testing.T, values map[string]any) map[string][]byte {
	t.Helper()
	keys := slices.Collect(maps.Keys(values))
	encoded, errs := bus.EncodeValues(values, keys)
	if errs != nil {
		t.Fatal(errors.Join(errs...))
	}
	out := make(map[string][]byte, len(values))
	for i, key := range keys {
		out[key] = encoded[i]
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
