package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/pluginhost"
	"switchyard.dev/switchyard/internal/telemetry"
)

// hostFixture is a Host running real plugin processes (this test binary,
// re-executed; see TestMain) and an Annotator calling them.
type hostFixture struct {
	ctx    context.Context
	host   *Host
	owners map[string]*ownedKey
	ann    *Annotator
	dir    string
}

func startHost(t *testing.T, cfg HostConfig, names ...string) *hostFixture {
	t.Helper()
	f := &hostFixture{dir: t.TempDir()}
	for _, name := range names {
		calls := f.callsFile(name)
		cfg.Sources = append(cfg.Sources, PluginSource{Name: "test " + name, Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), testPluginEnv+"="+name, testCallsEnv+"="+calls)
			return cmd
		}})
	}
	if cfg.Prefix == "" {
		cfg.Prefix = bus.DefaultAnnotationsPrefix
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	f.host = NewHost(cfg, zaptest.NewLogger(t))
	f.owners = f.host.Start(ctx)
	t.Cleanup(func() {
		cancel()
		f.host.Wait()
	})
	f.ann = NewAnnotator(f.owners, cfg.Prefix, f.host.apply)
	return f
}

func (f *hostFixture) callsFile(plugin string) string {
	return filepath.Join(f.dir, plugin+".calls")
}

// calls returns the batch sizes of every Apply call plugin received.
func (f *hostFixture) calls(t *testing.T, plugin string) []string {
	t.Helper()
	data, err := os.ReadFile(f.callsFile(plugin))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// plugin returns the hosted plugin name and its current client's pid (0
// while it is down).
func (f *hostFixture) plugin(t *testing.T, name string) (*hosted, int) {
	t.Helper()
	for _, p := range f.host.plugins {
		if p.desc.Name == name {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.client == nil {
				return p, 0
			}
			return p, p.client.Pid()
		}
	}
	t.Fatalf("no plugin %s running", name)
	return nil, 0
}

// change is one change of the translator's table.
type change map[string][]byte

// ingress adds an Ingress and a server of its own (host <name>.example.com,
// one location) to the change.
func (c change) ingress(ns, name string, annotations map[string]string) change {
	info, _ := json.Marshal(&bus.IngressInfo{Namespace: ns, Name: name, Annotations: annotations})
	c[bus.Key(bus.KindIngress, ns, name)] = info
	server, _ := json.Marshal(&bus.Server{Hostname: name + ".example.com", Locations: []bus.Location{
		{Path: "/", PathType: bus.PathPrefix, Backend: ns + "-" + name + "-80", Ingress: ns + "/" + name},
	}})
	c[bus.Key(bus.KindServer, name+".example.com")] = server
	return c
}

func (c change) settings(s bus.Settings) change {
	data, _ := json.Marshal(s)
	c[bus.SettingsKey] = data
	return c
}

func update(t *testing.T, a *Annotator, ctx context.Context, c change) bus.Output {
	t.Helper()
	out, err := a.Update(ctx, c)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return out
}

// served returns the features of the location of Ingress name in out, and
// whether the location is there at all.
func served(t *testing.T, out bus.Output, name string) (*bus.Features, bool) {
	t.Helper()
	data, ok := out.Puts[bus.Key(bus.KindServer, name+".example.com")]
	if !ok {
		t.Fatalf("server of %s not in the output (keys %v)", name, slices.Sorted(maps.Keys(out.Puts)))
	}
	var s bus.Server
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for _, loc := range s.Locations {
		if strings.HasSuffix(loc.Ingress, "/"+name) {
			return loc.Features, true
		}
	}
	return nil, false
}

// infoOf is the IngressInfo of ns/name in out.
func infoOf(t *testing.T, out bus.Output, ns, name string) *bus.IngressInfo {
	t.Helper()
	return harness.Decode[bus.IngressInfo](t, out.Puts, bus.Key(bus.KindIngress, ns, name))
}

func headerOf(f *bus.Features, name string) string {
	if f == nil {
		return ""
	}
	for _, h := range f.ResponseHeaders {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// TestHostOwnership: each key has one owner; a plugin claiming a key that
// is taken is refused and the first keeps running and answering.
func TestHostOwnership(t *testing.T) {
	f := startHost(t, HostConfig{}, "header", "dup", "other")
	var names []string
	for _, d := range f.host.Plugins() {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"header", "other"}) {
		t.Fatalf("running plugins %v, want [header other]: dup claims header's key and must be refused", names)
	}
	if o := f.owners[headerKey]; o == nil || o.plugin.desc.Name != "header" {
		t.Fatalf("owner of %s: %+v, want header", headerKey, o)
	}
	if o := f.owners[otherKey]; o == nil || o.plugin.desc.Name != "other" {
		t.Fatalf("owner of %s: %+v, want other", otherKey, o)
	}
	out := update(t, f.ann, f.ctx, change{}.ingress("ns", "both", map[string]string{headerKey: "abc", otherKey: "xyz"}))
	feats, ok := served(t, out, "both")
	if !ok || headerOf(feats, "X-header") != "abc" || headerOf(feats, "X-other") != "xyz" {
		t.Fatalf("features %+v (served %v), want X-header: abc from header and X-other: xyz from other", feats, ok)
	}
	if got := f.calls(t, "dup"); len(got) != 0 {
		t.Errorf("the refused plugin was called: %v", got)
	}
}

// TestHostOneCallPerPlugin: a change touching N Ingresses is one Apply
// call per plugin, with the N Ingresses; a later change sends only what it
// touched, and a change no annotation of the plugin is in sends nothing.
func TestHostOneCallPerPlugin(t *testing.T) {
	f := startHost(t, HostConfig{}, "header", "other")
	const n = 25
	c := change{}
	for i := range n {
		c.ingress("ns", fmt.Sprintf("i%d", i), map[string]string{headerKey: fmt.Sprintf("v%d", i)})
	}
	out := update(t, f.ann, f.ctx, c)
	if got := f.calls(t, "header"); !slices.Equal(got, []string{fmt.Sprint(n)}) {
		t.Fatalf("header plugin calls %v, want one call with %d Ingresses", got, n)
	}
	if got := f.calls(t, "other"); len(got) != 0 {
		t.Fatalf("other plugin called %v for Ingresses without its annotation", got)
	}
	for i := range n {
		if feats, ok := served(t, out, fmt.Sprintf("i%d", i)); !ok || headerOf(feats, "X-header") != fmt.Sprintf("v%d", i) {
			t.Fatalf("i%d: features %+v", i, feats)
		}
	}

	update(t, f.ann, f.ctx, change{}.ingress("ns", "i3", map[string]string{headerKey: "changed"}))
	update(t, f.ann, f.ctx, change{}.ingress("ns", "plain", nil))
	if got := f.calls(t, "header"); !slices.Equal(got, []string{fmt.Sprint(n), "1"}) {
		t.Fatalf("header plugin calls %v, want [%d 1]: one changed Ingress, then one without its annotation", got, n)
	}
}

// TestHostRejects: what the host checks itself, and what it checks of a
// plugin's answer, rejects the Ingress with a Problem naming the
// annotation; nothing of it is served, and the Ingress next to it is.
func TestHostRejects(t *testing.T) {
	f := startHost(t, HostConfig{}, "header")
	cases := []struct {
		name        string
		annotations map[string]string
		key, msg    string
	}{
		{"pattern", map[string]string{headerKey: "UPPER;case"}, headerKey, "does not match"},
		{"newline", map[string]string{headerKey: "ok\nadd_header x y"}, headerKey, "line break"},
		{"cr", map[string]string{headerKey: "ok\rx"}, headerKey, "line break"},
		{"nul", map[string]string{headerKey: "ok\x00"}, headerKey, "NUL"},
		{"risk", map[string]string{riskyKey: "abc"}, riskyKey, "above the controller's annotations-risk-level High"},
		{"owned-snippet", map[string]string{snippetKey: "return 200;"}, snippetKey, "snippet annotations are off"},
		{"unowned-snippet", map[string]string{bus.DefaultAnnotationsPrefix + "/configuration-snippet": "more_set_headers x;"},
			bus.DefaultAnnotationsPrefix + "/configuration-snippet", "snippet annotations are off"},
		{"catalog-refused", map[string]string{bus.DefaultAnnotationsPrefix + "/enable-modsecurity": "true"},
			bus.DefaultAnnotationsPrefix + "/enable-modsecurity", "is refused: the ModSecurity firewall is not enforced without its plugin"},
		{"plugin-error", map[string]string{headerKey: rejectValue}, headerKey, "the plugin says no"},
		{"bad-features", map[string]string{headerKey: forgedValue}, "", "a plugin returned features the host refuses"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := update(t, f.ann, f.ctx, change{}.
				ingress("ns", "bad-"+c.name, c.annotations).
				ingress("ns", "good-"+c.name, map[string]string{headerKey: "fine"}))
			info := infoOf(t, out, "ns", "bad-"+c.name)
			if !info.Rejected || len(info.Problems) == 0 {
				t.Fatalf("info %+v: want rejected with a problem", info)
			}
			p := info.Problems[0]
			if !strings.Contains(p.Field+" "+p.Message, c.key) || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("problem %+v: want it to name %q and say %q", p, c.key, c.msg)
			}
			if feats, ok := served(t, out, "bad-"+c.name); ok {
				t.Fatalf("rejected Ingress still served, features %+v", feats)
			}
			server := string(out.Puts[bus.Key(bus.KindServer, "bad-"+c.name+".example.com")])
			for _, v := range c.annotations {
				if strings.Contains(server, v) || strings.Contains(server, "return 200") {
					t.Fatalf("the annotated server holds the rejected value: %s", server)
				}
			}
			if feats, ok := served(t, out, "good-"+c.name); !ok || headerOf(feats, "X-header") != "fine" {
				t.Fatalf("the other Ingress: served %v with %+v", ok, feats)
			}
		})
	}
}

// TestHostWarnsUnowned: an annotation under the prefix that no plugin owns
// is never ignored in silence. One of ingress-nginx's names Switchyard does
// not support, or a name nobody knows (a typo, with the closest name), is a
// warning: the Ingress is served with its other annotations. Keys under
// other prefixes are not ours and pass without a word.
func TestHostWarnsUnowned(t *testing.T) {
	f := startHost(t, HostConfig{}, "header")
	prefix := bus.DefaultAnnotationsPrefix + "/"
	cases := []struct {
		name, key, reason, msg string
	}{
		{"unsupported", prefix + "http2-push-preload", ReasonAnnotationNotSupported, "not supported by Switchyard and is ignored: HTTP/2 server push"},
		{"alias", prefix + "limit-whitelist", ReasonAnnotationNotSupported, "is ignored: rate limiting"},
		{"typo", prefix + "proxy-bdy-size", ReasonUnknownAnnotation, "did you mean " + prefix + "proxy-body-size?"},
		{"unknown", prefix + "frobnicate", ReasonUnknownAnnotation, "is not an ingress-nginx or Switchyard annotation; it is ignored"},
		{"removed secure-backends", prefix + "secure-backends", ReasonUnknownAnnotation, `use ` + prefix + `backend-protocol: "HTTPS"`},
		{"removed grpc-backend", prefix + "grpc-backend", ReasonUnknownAnnotation, `use ` + prefix + `backend-protocol: "GRPC"`},
		{"other-prefix", "example.com/proxy-body-size", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := update(t, f.ann, f.ctx, change{}.
				ingress("ns", "warn-"+c.name, map[string]string{headerKey: "kept", c.key: "1"}))
			info := infoOf(t, out, "ns", "warn-"+c.name)
			if info.Rejected {
				t.Fatalf("info %+v: want served", info)
			}
			if feats, ok := served(t, out, "warn-"+c.name); !ok || headerOf(feats, "X-header") != "kept" {
				t.Fatalf("served %v with %+v: want the owned annotation applied", ok, feats)
			}
			if c.reason == "" {
				if len(info.Problems) != 0 {
					t.Fatalf("problems %+v for a key under another prefix", info.Problems)
				}
				return
			}
			if len(info.Problems) != 1 {
				t.Fatalf("problems %+v: want one warning", info.Problems)
			}
			p := info.Problems[0]
			if p.Reason != c.reason || p.Field != "metadata.annotations["+c.key+"]" || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("problem %+v: want reason %s on %s saying %q", p, c.reason, c.key, c.msg)
			}
		})
	}
}

// TestHostRestart: a plugin killed with SIGKILL fails its Ingresses closed
// (503) while it is down, is restarted by the supervisor as a new process,
// and the Ingresses that failed meanwhile are applied again. The metrics
// hear of the restart and of every call.
func TestHostRestart(t *testing.T) {
	rec := &pluginRecorder{restarts: map[string]int{}, calls: map[string]int{}}
	telemetry.Set(rec)
	t.Cleanup(func() { telemetry.Set(nil) })
	f := startHost(t, HostConfig{HealthInterval: 200 * time.Millisecond}, "header")
	out := update(t, f.ann, f.ctx, change{}.ingress("ns", "before", map[string]string{headerKey: "one"}))
	if feats, _ := served(t, out, "before"); headerOf(feats, "X-header") != "one" {
		t.Fatalf("before the kill: %+v", feats)
	}
	p, pid := f.plugin(t, "header")
	p.mu.Lock()
	client := p.client
	p.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !client.Exited(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed plugin did not exit")
		}
	}

	out = update(t, f.ann, f.ctx, change{}.ingress("ns", "during", map[string]string{headerKey: "two"}))
	feats, ok := served(t, out, "during")
	if !ok || feats == nil || feats.Deny == nil || feats.Deny.Status != 503 {
		t.Fatalf("while the plugin is down: served %v with %+v, want Deny 503", ok, feats)
	}
	if info := infoOf(t, out, "ns", "during"); len(info.Problems) == 0 || info.Problems[0].Reason != ReasonPluginUnavailable {
		t.Fatalf("while the plugin is down: problems %+v, want %s", info.Problems, ReasonPluginUnavailable)
	}

	select {
	case name := <-f.host.Recovered():
		if name != "header" {
			t.Fatalf("recovered %q, want header", name)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervisor did not restart the plugin")
	}
	if _, newPid := f.plugin(t, "header"); newPid == 0 || newPid == pid {
		t.Fatalf("pid after restart %d, before %d: want a new process", newPid, pid)
	}
	out, err := f.ann.Retry(f.ctx, "header")
	if err != nil {
		t.Fatal(err)
	}
	feats, ok = served(t, out, "during")
	if !ok || feats == nil || feats.Deny != nil || headerOf(feats, "X-header") != "two" {
		t.Fatalf("after the restart: served %v with %+v, want X-header: two and no Deny", ok, feats)
	}
	if info := infoOf(t, out, "ns", "during"); len(info.Problems) != 0 {
		t.Fatalf("after the restart: problems %+v remain", info.Problems)
	}
	// The Retry is one call with the one Ingress that failed.
	if got := f.calls(t, "header"); !slices.Equal(got, []string{"1", "1"}) {
		t.Fatalf("calls %v, want [1 1]: before the kill, and the retry", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.restarts["header"] != 1 || rec.calls["header"] < 2 {
		t.Fatalf("telemetry heard %d restarts and %d calls of header, want 1 and at least 2", rec.restarts["header"], rec.calls["header"])
	}
}

// pluginRecorder is a telemetry.Observer that counts plugin reports.
type pluginRecorder struct {
	mu              sync.Mutex
	restarts, calls map[string]int
}

func (r *pluginRecorder) BusSent(string, string, int)                  {}
func (r *pluginRecorder) StageHandled(string, uint64, time.Time, bool) {}
func (r *pluginRecorder) LeaderElection(string, bool)                  {}
func (r *pluginRecorder) PluginCall(plugin string, _ time.Duration, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[plugin]++
}
func (r *pluginRecorder) PluginRestart(plugin string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restarts[plugin]++
}

// TestHostCallTimeout: a plugin that does not answer within CallTimeout
// fails the Ingresses of the call closed, and the call returns in time.
func TestHostCallTimeout(t *testing.T) {
	f := startHost(t, HostConfig{CallTimeout: 2 * time.Second}, "header")
	begin := time.Now()
	out := update(t, f.ann, f.ctx, change{}.ingress("ns", "slow", map[string]string{headerKey: sleepValue}))
	if took := time.Since(begin); took > 4*time.Second {
		t.Fatalf("the call took %v with a 2s CallTimeout", took)
	}
	feats, ok := served(t, out, "slow")
	if !ok || feats == nil || feats.Deny == nil || feats.Deny.Status != 503 {
		t.Fatalf("slow plugin: served %v with %+v, want Deny 503", ok, feats)
	}
	info := infoOf(t, out, "ns", "slow")
	if len(info.Problems) == 0 || info.Problems[0].Reason != ReasonPluginUnavailable || !strings.Contains(info.Problems[0].Message, "DeadlineExceeded") {
		t.Fatalf("problems %+v, want %s saying the deadline was exceeded", info.Problems, ReasonPluginUnavailable)
	}
}

// TestHostBuiltinThatCannotStartFailsClosed: a built-in plugin whose
// process does not start still owns its annotations (the host knows them
// from the binary), so an Ingress using them answers 503 instead of being
// served as if the annotation were absent.
func TestHostBuiltinThatCannotStartFailsClosed(t *testing.T) {
	desc := testPlugins["header"].Describe()
	f := startHost(t, HostConfig{HealthInterval: time.Hour, Sources: []PluginSource{{
		Name: "builtin header", Known: &desc,
		Command: func() *exec.Cmd { return exec.Command("/nonexistent/switchyard-plugin") },
	}}})
	if f.owners[headerKey] == nil {
		t.Fatalf("the key of the plugin that did not start has no owner: %v", f.owners)
	}
	out := update(t, f.ann, f.ctx, change{}.ingress("ns", "guarded", map[string]string{headerKey: "one"}))
	feats, ok := served(t, out, "guarded")
	if !ok || feats == nil || feats.Deny == nil || feats.Deny.Status != 503 {
		t.Fatalf("served %v with %+v, want Deny 503", ok, feats)
	}
	if info := infoOf(t, out, "ns", "guarded"); len(info.Problems) == 0 || info.Problems[0].Reason != ReasonPluginUnavailable {
		t.Fatalf("problems %+v, want %s", info.Problems, ReasonPluginUnavailable)
	}
}

// TestHostBuiltinOfAnotherBuildFailsClosed: a built-in plugin served by a
// switchyard-plugins binary of another build (it describes other
// annotations than the controller knows) is refused, and what the
// controller knows it owns fails closed.
func TestHostBuiltinOfAnotherBuildFailsClosed(t *testing.T) {
	desc := testPlugins["header"].Describe()
	f := startHost(t, HostConfig{HealthInterval: time.Hour, Sources: []PluginSource{{
		Name: "builtin header", Known: &desc,
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), testPluginEnv+"=other")
			return cmd
		},
	}}})
	if f.owners[headerKey] == nil || f.owners[otherKey] != nil {
		t.Fatalf("owners %v: want the known keys only", slices.Sorted(maps.Keys(f.owners)))
	}
	out := update(t, f.ann, f.ctx, change{}.ingress("ns", "guarded", map[string]string{headerKey: "one"}))
	feats, ok := served(t, out, "guarded")
	if !ok || feats == nil || feats.Deny == nil || feats.Deny.Status != 503 {
		t.Fatalf("served %v with %+v, want Deny 503", ok, feats)
	}
}

// TestHostGroupSharesOneProcess: plugins of a group (the built-ins' way)
// run in one process, each answering for itself; when that process dies,
// every one of them fails closed and comes back in one new process.
func TestHostGroupSharesOneProcess(t *testing.T) {
	group := pluginhost.NewGroup(func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), testPluginEnv+"="+testPluginSet)
		return cmd
	})
	var cfg HostConfig
	for _, name := range []string{"header", "other"} {
		known := testPlugins[name].Describe()
		cfg.Sources = append(cfg.Sources, PluginSource{Name: "grouped " + name, Known: &known, Group: group})
	}
	f := startHost(t, HostConfig{Sources: cfg.Sources, HealthInterval: 200 * time.Millisecond})
	both := func(stage string) int {
		t.Helper()
		out := update(t, f.ann, f.ctx, change{}.ingress("ns", stage, map[string]string{headerKey: "one", otherKey: "two"}))
		feats, _ := served(t, out, stage)
		if headerOf(feats, "X-header") != "one" || headerOf(feats, "X-other") != "two" {
			t.Fatalf("%s: features %+v, want X-header from one plugin and X-other from the other", stage, feats)
		}
		_, a := f.plugin(t, "header")
		_, b := f.plugin(t, "other")
		if a == 0 || a != b {
			t.Fatalf("%s: pids %d and %d, want one process", stage, a, b)
		}
		return a
	}
	pid := both("before")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	back := map[string]bool{}
	for len(back) < 2 {
		select {
		case name := <-f.host.Recovered():
			back[name] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("recovered %v, want both plugins", back)
		}
	}
	if after := both("after"); after == pid {
		t.Fatalf("pid %d after the kill: want a new process", after)
	}
}
