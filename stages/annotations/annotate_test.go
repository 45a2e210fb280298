package annotations

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
)

// fakeAnnotator is an Annotator whose one plugin ("fake", owning headerKey
// with Risk Medium) runs in process and records what it is sent: the
// Annotator's bookkeeping tested without processes.
type fakeAnnotator struct {
	*Annotator
	batches [][]string // the Ingresses of each call
}

func newFakeAnnotator(t *testing.T) *fakeAnnotator {
	t.Helper()
	p := &hosted{desc: plugins.Description{Name: "fake", Annotations: []plugins.Annotation{
		{Key: headerKey, Pattern: `[a-z0-9-]*`, Risk: plugins.RiskMedium},
	}}}
	keys, err := NewHost(HostConfig{Prefix: bus.DefaultAnnotationsPrefix}, zap.NewNop()).compileKeys(p)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAnnotator{}
	f.Annotator = NewAnnotator(keys, bus.DefaultAnnotationsPrefix, func(_ context.Context, _ *hosted, batch []plugins.Ingress) ([]plugins.Result, error) {
		var ids []string
		var out []plugins.Result
		for _, in := range batch {
			ids = append(ids, in.Namespace+"/"+in.Name)
			r := plugins.Result{Namespace: in.Namespace, Name: in.Name}
			r.Features.ResponseHeaders = []plugins.Header{{Name: "X-Fake", Value: in.Annotations[headerKey]}}
			out = append(out, r)
		}
		f.batches = append(f.batches, ids)
		return out, nil
	})
	return f
}

func (f *fakeAnnotator) lastBatch() []string {
	if len(f.batches) == 0 {
		return nil
	}
	return f.batches[len(f.batches)-1]
}

func TestAnnotatorOnlyDirtySent(t *testing.T) {
	f := newFakeAnnotator(t)
	ctx := context.Background()
	update(t, f.Annotator, ctx, change{}.
		ingress("ns", "a", map[string]string{headerKey: "a"}).
		ingress("ns", "b", map[string]string{headerKey: "b"}).
		ingress("ns", "c", map[string]string{headerKey: "c"}))
	if got := f.lastBatch(); !slices.Equal(got, []string{"ns/a", "ns/b", "ns/c"}) {
		t.Fatalf("first batch %v", got)
	}
	update(t, f.Annotator, ctx, change{}.ingress("ns", "b", map[string]string{headerKey: "b2"}))
	if len(f.batches) != 2 || !slices.Equal(f.lastBatch(), []string{"ns/b"}) {
		t.Fatalf("batches %v, want the second with ns/b only", f.batches)
	}
}

func TestAnnotatorServerTouchedOnlyWhenResultChanges(t *testing.T) {
	f := newFakeAnnotator(t)
	ctx := context.Background()
	update(t, f.Annotator, ctx, change{}.ingress("ns", "a", map[string]string{headerKey: "v1"}))

	// The Ingress changes (a new generation) but its annotations do not:
	// its info is republished, its server is not.
	c := change{}
	c[bus.Key(bus.KindIngress, "ns", "a")] = mustJSON(t, &bus.IngressInfo{Namespace: "ns", Name: "a", Generation: 2,
		Annotations: map[string]string{headerKey: "v1"}})
	out := update(t, f.Annotator, ctx, c)
	if _, ok := out.Puts[bus.Key(bus.KindServer, "a.example.com")]; ok {
		t.Fatalf("server republished though the features did not change: %v", slices.Sorted(maps.Keys(out.Puts)))
	}
	if _, ok := out.Puts[bus.Key(bus.KindIngress, "ns", "a")]; !ok {
		t.Fatal("ingress info not republished")
	}

	c = change{}
	c[bus.Key(bus.KindIngress, "ns", "a")] = mustJSON(t, &bus.IngressInfo{Namespace: "ns", Name: "a", Generation: 3,
		Annotations: map[string]string{headerKey: "v2"}})
	out = update(t, f.Annotator, ctx, c)
	if feats, ok := served(t, out, "a"); !ok || headerOf(feats, "X-Fake") != "v2" {
		t.Fatalf("after the annotation changed: served %v with %+v, want X-Fake: v2", ok, feats)
	}
}

func TestAnnotatorDeletedIngress(t *testing.T) {
	f := newFakeAnnotator(t)
	ctx := context.Background()
	update(t, f.Annotator, ctx, change{}.ingress("ns", "a", map[string]string{headerKey: "v1"}))
	calls := len(f.batches)

	// The translator deletes the Ingress and its server in one change.
	out := update(t, f.Annotator, ctx, change{
		bus.Key(bus.KindIngress, "ns", "a"):      nil,
		bus.Key(bus.KindServer, "a.example.com"): nil,
	})
	if !slices.Contains(out.Deletes, bus.Key(bus.KindIngress, "ns", "a")) || !slices.Contains(out.Deletes, bus.Key(bus.KindServer, "a.example.com")) {
		t.Fatalf("deletes %v, want the ingress and its server", out.Deletes)
	}
	if len(f.batches) != calls {
		t.Fatalf("the plugin was called for a deleted Ingress: %v", f.batches)
	}
	if _, ok := f.results["ns/a"]; ok {
		t.Fatal("the deleted Ingress's result is kept")
	}
	// Created again, it is applied from scratch.
	out = update(t, f.Annotator, ctx, change{}.ingress("ns", "a", map[string]string{headerKey: "v3"}))
	if feats, ok := served(t, out, "a"); !ok || headerOf(feats, "X-Fake") != "v3" {
		t.Fatalf("re-created: served %v with %+v", ok, feats)
	}
}

func TestAnnotatorSettingsReapplyAll(t *testing.T) {
	f := newFakeAnnotator(t)
	ctx := context.Background()
	update(t, f.Annotator, ctx, change{}.
		ingress("ns", "a", map[string]string{headerKey: "a"}).
		ingress("ns", "b", map[string]string{headerKey: "b"}).
		settings(bus.DefaultSettings()))

	// A settings change that the annotations stage does not read re-applies
	// nothing.
	s := bus.DefaultSettings()
	s.ProxyReadTimeout = 120
	before := len(f.batches)
	out := update(t, f.Annotator, ctx, change{}.settings(s))
	if len(f.batches) != before {
		t.Fatalf("a settings change that does not concern annotations called the plugin: %v", f.batches[before:])
	}
	if _, ok := out.Puts[bus.SettingsKey]; !ok {
		t.Fatal("the settings did not pass through")
	}

	// annotations-risk-level Low refuses the Medium annotation of every
	// Ingress: all are re-checked, none served.
	s.AnnotationsRiskLevel = "Low"
	out = update(t, f.Annotator, ctx, change{}.settings(s))
	for _, name := range []string{"a", "b"} {
		if feats, ok := served(t, out, name); ok {
			t.Errorf("%s served with %+v under annotations-risk-level Low", name, feats)
		}
		if info := infoOf(t, out, "ns", name); !info.Rejected || info.Problems[0].Reason != ReasonAnnotationRefused {
			t.Errorf("%s: info %+v, want refused", name, info)
		}
	}

	// Back to High: all served again.
	s.AnnotationsRiskLevel = "High"
	out = update(t, f.Annotator, ctx, change{}.settings(s))
	for _, name := range []string{"a", "b"} {
		if feats, ok := served(t, out, name); !ok || headerOf(feats, "X-Fake") != name {
			t.Errorf("%s: served %v with %+v after the risk level went back to High", name, ok, feats)
		}
	}
	if got := f.lastBatch(); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("last batch %v, want both Ingresses", got)
	}
}

// TestAnnotationValueWordBlocklist: an Ingress whose annotation value
// holds a word of annotation-value-word-blocklist is not served (the
// other one is), re-checked when the list changes; an annotation under
// another prefix is not ours to judge.
func TestAnnotationValueWordBlocklist(t *testing.T) {
	f := newFakeAnnotator(t)
	ctx := context.Background()
	s := bus.DefaultSettings()
	s.AnnotationValueWordBlocklist = []string{"load_module", "{"}
	out := update(t, f.Annotator, ctx, change{}.
		ingress("ns", "bad", map[string]string{headerKey: "a", bus.DefaultAnnotationsPrefix + "/proxy-redirect-from": "x{y"}).
		ingress("ns", "good", map[string]string{headerKey: "plain", "example.com/other": "load_module"}).
		settings(s))
	if feats, ok := served(t, out, "bad"); ok {
		t.Errorf("bad served with %+v", feats)
	}
	if info := infoOf(t, out, "ns", "bad"); !info.Rejected || info.Problems[0].Reason != ReasonAnnotationRefused ||
		!strings.Contains(info.Problems[0].Message, "annotation-value-word-blocklist") {
		t.Errorf("bad: info %+v, want refused naming the blocklist", info)
	}
	if feats, ok := served(t, out, "good"); !ok || headerOf(feats, "X-Fake") != "plain" {
		t.Errorf("good: served %v with %+v", ok, feats)
	}
	s.AnnotationValueWordBlocklist = []string{}
	out = update(t, f.Annotator, ctx, change{}.settings(s))
	if feats, ok := served(t, out, "bad"); !ok || headerOf(feats, "X-Fake") != "a" {
		t.Errorf("bad without the blocklist: served %v with %+v", ok, feats)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestForeignSecretRefs: a SecretRef annotation naming another
// namespace's Secret is refused by the host, before any plugin sees it,
// while allow-cross-namespace-resources is off; with the key on, the
// plugin gets the Secret. Turning the key on re-applies the Ingress.
func TestForeignSecretRefs(t *testing.T) {
	const secretKey = bus.DefaultAnnotationsPrefix + "/auth-secret"
	a, sent := newRecordingAnnotator(t, plugins.Annotation{Key: "auth-secret", Pattern: `[a-z0-9/-]+`, Risk: plugins.RiskMedium, SecretRef: true})
	ctx := context.Background()
	c := change{}.ingress("app", "web", map[string]string{secretKey: "shared/users"}).settings(bus.DefaultSettings())
	c[bus.Key(bus.KindSecret, "shared", "users")] = mustJSON(t, &bus.Secret{Namespace: "shared", Name: "users", Data: map[string][]byte{"auth": []byte("u:h")}})
	out := update(t, a, ctx, c)
	info := infoOf(t, out, "app", "web")
	if !info.Rejected || len(info.Problems) != 1 || info.Problems[0].Reason != ReasonAnnotationRefused ||
		!strings.Contains(info.Problems[0].Message, "allow-cross-namespace-resources") || !strings.Contains(info.Problems[0].Message, "shared/users") {
		t.Fatalf("key off: %+v, want refused naming the Secret and the key", info)
	}
	if len(*sent) != 0 {
		t.Fatalf("key off: the plugin was sent %v", *sent)
	}

	s := bus.DefaultSettings()
	s.AllowCrossNamespaceResources = true
	out = update(t, a, ctx, change{}.settings(s))
	if info := infoOf(t, out, "app", "web"); info.Rejected {
		t.Fatalf("key on: %+v, want served", info)
	}
	if len(*sent) != 1 || string((*sent)[0].Secrets["shared/users"]["auth"]) != "u:h" {
		t.Fatalf("key on: the plugin was sent %d Ingresses, want one with shared/users", len(*sent))
	}
}

// newRecordingAnnotator is an Annotator whose one plugin owns annotations
// (relative to the default prefix) and records every Ingress it is sent.
func newRecordingAnnotator(t *testing.T, annotations ...plugins.Annotation) (*Annotator, *[]plugins.Ingress) {
	t.Helper()
	p := &hosted{desc: plugins.Description{Name: "recorder", Annotations: annotations}}
	keys, err := NewHost(HostConfig{Prefix: bus.DefaultAnnotationsPrefix}, zap.NewNop()).compileKeys(p)
	if err != nil {
		t.Fatal(err)
	}
	var sent []plugins.Ingress
	a := NewAnnotator(keys, bus.DefaultAnnotationsPrefix, func(_ context.Context, _ *hosted, batch []plugins.Ingress) ([]plugins.Result, error) {
		var out []plugins.Result
		for _, in := range batch {
			sent = append(sent, in)
			out = append(out, plugins.Result{Namespace: in.Namespace, Name: in.Name})
		}
		return out, nil
	})
	return a, &sent
}

// TestModSecuritySnippetTypedValue: a modsecurity-snippet that is exactly
// one SecRuleEngine line reaches its plugin as the mode, with snippets
// off; any other modsecurity-snippet is refused as a snippet, and the
// plugin never sees it.
func TestModSecuritySnippetTypedValue(t *testing.T) {
	const key = bus.DefaultAnnotationsPrefix + "/modsecurity-snippet"
	a, sent := newRecordingAnnotator(t, plugins.Annotation{Key: "modsecurity-snippet", Pattern: `On|DetectionOnly|Off`, Risk: plugins.RiskLow})
	ctx := context.Background()
	for _, c := range []struct {
		value, mode string
	}{
		{"SecRuleEngine On\n", "On"},
		{"  secruleengine   DetectionOnly", "DetectionOnly"},
		{"SecRuleEngine Off", "Off"},
		{"SecRuleEngine On\nSecRule ARGS \"@rx x\" \"id:1,deny\"", ""},
		{"Include /etc/passwd", ""},
		{"On", ""}, // the mode alone is no SecRuleEngine line
	} {
		*sent = nil
		out := update(t, a, ctx, change{}.ingress("app", "waf", map[string]string{key: c.value}).settings(bus.DefaultSettings()))
		info := infoOf(t, out, "app", "waf")
		if c.mode == "" {
			if !info.Rejected || len(info.Problems) != 1 || !strings.Contains(info.Problems[0].Message, "snippet") || len(*sent) != 0 {
				t.Errorf("%q: %+v, plugin sent %d; want refused as a snippet", c.value, info, len(*sent))
			}
			continue
		}
		if info.Rejected || len(*sent) != 1 || (*sent)[0].Annotations["modsecurity-snippet"] != c.mode {
			t.Errorf("%q: %+v, plugin sent %+v; want the mode %s", c.value, info, *sent, c.mode)
		}
	}
	// allow-snippet-annotations changes the reason, not the refusal.
	s := bus.DefaultSettings()
	s.AllowSnippetAnnotations = true
	*sent = nil
	out := update(t, a, ctx, change{}.ingress("app", "raw", map[string]string{key: "Include /etc/passwd"}).settings(s))
	if info := infoOf(t, out, "app", "raw"); !info.Rejected || len(*sent) != 0 || !strings.Contains(info.Problems[0].Message, "does not render snippets") {
		t.Errorf("snippets allowed: %+v, plugin sent %d; want refused, Switchyard does not render snippets", info, len(*sent))
	}
}
