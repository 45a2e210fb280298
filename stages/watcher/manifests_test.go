package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/manifest/manifesttest"
)

// --- manifestSource ---

type harness struct {
	t    *testing.T
	dir  string
	out  chan objectSet
	logs *observer.ObservedLogs
	last map[string][]byte
}

// startSource runs a manifestSource on dir until the test ends; tune, if
// given, adjusts it first.
func startSource(t *testing.T, dir string, tune ...func(*manifestSource)) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	src := newManifestSource(dir, zap.New(core))
	for _, f := range tune {
		f(src)
	}
	h := &harness{t: t, dir: dir, out: make(chan objectSet), logs: logs}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		for _, e := range logs.All() {
			if strings.Contains(e.Message, manifesttest.SecretMarker) || strings.Contains(fmt.Sprint(e.ContextMap()), manifesttest.SecretMarker) {
				t.Errorf("log line leaks secret data: %s %v", e.Message, e.ContextMap())
			}
		}
	})
	return h
}

// next returns the next set sent, failing after 5 s.
func (h *harness) next() map[string][]byte {
	h.t.Helper()
	select {
	case set := <-h.out:
		return h.receive(set)
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no object set within 5s; last %q", sortedKeys(h.last))
		return nil
	}
}

// receive checks what the source says changed against the set before:
// every key it does not name holds what it held (the watcher compares only
// the keys named). The first set names none: it cannot say.
func (h *harness) receive(set objectSet) map[string][]byte {
	h.t.Helper()
	if h.last == nil && set.changed != nil {
		h.t.Errorf("the first set says which keys changed: %q", set.changed)
	}
	if h.last != nil && set.changed != nil {
		said := map[string]bool{}
		for _, k := range set.changed {
			said[k] = true
		}
		for _, k := range slices.Concat(sortedKeys(set.objects), sortedKeys(h.last)) {
			a, inNew := set.objects[k]
			b, inLast := h.last[k]
			if !said[k] && (inNew != inLast || !bytes.Equal(a, b)) {
				h.t.Errorf("%s changed, and the source did not say so (it said %q)", k, set.changed)
			}
		}
	}
	h.last = set.objects
	return set.objects
}

// waitFor reads sets until one satisfies ok, failing after 5 s. Editors and
// os.WriteFile write in steps, so intermediate sets may come first.
func (h *harness) waitFor(what string, ok func(map[string][]byte) bool) map[string][]byte {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case set := <-h.out:
			if ok(h.receive(set)) {
				return set.objects
			}
		case <-deadline:
			h.t.Fatalf("no object set with %s within 5s; last %q", what, sortedKeys(h.last))
			return nil
		}
	}
}

// quiet asserts that nothing is sent for d.
func (h *harness) quiet(d time.Duration) {
	h.t.Helper()
	select {
	case set := <-h.out:
		h.t.Fatalf("unexpected object set %q", sortedKeys(set.objects))
	case <-time.After(d):
	}
}

// waitLog waits for a log entry with msg for file.
func (h *harness) waitLog(msg, file string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range h.logs.FilterMessage(msg).All() {
			if e.ContextMap()["file"] == file {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no log %q for %s", msg, file)
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// writeAtomic writes a temporary file and renames it over name, as editors
// and GitOps tools do.
func (h *harness) writeAtomic(name, content string) {
	h.t.Helper()
	tmp := filepath.Join(h.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func cmKey(name string) string { return bus.Key(bus.KindObject, "configmap", "default", name) }

// cmValue is data.value of the ConfigMap under key in set, "" if absent.
func cmValue(t *testing.T, set map[string][]byte, name string) string {
	t.Helper()
	js, ok := set[cmKey(name)]
	if !ok {
		return ""
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(js, &cm); err != nil {
		t.Fatalf("unmarshal %s: %v", js, err)
	}
	return cm.Data["value"]
}

func TestManifestSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("a.yaml", configMap("a", "1"))
	h.write("b.yml", configMap("b", "1")+"---\n"+configMap("b2", "1"))
	h.write("notes.txt", configMap("ignored", "1"))
	h.write(".hidden.yaml", configMap("ignored", "1"))
	h.write("a.yaml~", configMap("ignored", "1"))
	h.write("a.yaml.swp", configMap("ignored", "1"))
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("sub.yaml/c.yaml", configMap("ignored", "1"))
	h = startSource(t, dir)

	set := h.next()
	if got, want := sortedKeys(set), []string{cmKey("a"), cmKey("b"), cmKey("b2")}; !slices.Equal(got, want) {
		t.Fatalf("initial set %q, want %q", got, want)
	}

	// Nothing changes: nothing is sent, even when files are touched or
	// ignored files change.
	h.write("notes.txt", "changed")
	h.writeAtomic("a.yaml", configMap("a", "1"))
	later := time.Now().Add(time.Hour)
	mustDo(t, os.Chtimes(filepath.Join(dir, "b.yml"), later, later))
	h.quiet(200 * time.Millisecond)

	// A new file adds its objects.
	h.write("c.yaml", configMap("c", "1"))
	h.waitFor("c", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "1" })

	// A modified file changes them.
	h.write("a.yaml", configMap("a", "2"))
	set = h.waitFor("a=2", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "2" })
	if len(set) != 4 {
		t.Errorf("set after modify: %q", sortedKeys(set))
	}

	// A broken file keeps its last good objects; the other files still work.
	h.writeAtomic("a.yaml", configMap("a", "3")+"  broken: [\n")
	h.waitLog("manifest file does not parse; keeping its last good objects", "a.yaml")
	h.write("b.yml", configMap("b", "2")+"---\n"+configMap("b2", "1"))
	set = h.waitFor("b=2", func(s map[string][]byte) bool { return cmValue(t, s, "b") == "2" })
	if cmValue(t, set, "a") != "2" || len(set) != 4 {
		t.Errorf("broken a.yaml did not keep its objects: a=%q, keys %q", cmValue(t, set, "a"), sortedKeys(set))
	}
	for _, e := range h.logs.FilterMessage("manifest file does not parse; keeping its last good objects").All() {
		if err, _ := e.ContextMap()["error"].(string); !strings.Contains(err, "a.yaml:") {
			t.Errorf("parse error log does not name the file and line: %v", e.ContextMap())
		}
	}

	// Fixing it brings the new objects.
	h.write("a.yaml", configMap("a", "4")+"---\n"+configMap("a2", "4"))
	h.waitFor("a=4, a2", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "4" && cmValue(t, s, "a2") == "4" })
	h.waitLog("manifest file parses again", "a.yaml")

	// An atomic rename over a file is picked up.
	h.writeAtomic("c.yaml", configMap("c", "2"))
	h.waitFor("c=2", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "2" })

	// A deleted file takes its objects along.
	if err := os.Remove(filepath.Join(dir, "b.yml")); err != nil {
		t.Fatal(err)
	}
	set = h.waitFor("b gone", func(s map[string][]byte) bool { _, ok := s[cmKey("b")]; return !ok })
	if _, ok := set[cmKey("b2")]; ok || len(set) != 3 {
		t.Errorf("after delete: %q", sortedKeys(set))
	}

	// So does one renamed to a name that is not read.
	if err := os.Rename(filepath.Join(dir, "c.yaml"), filepath.Join(dir, "c.yaml.bak")); err != nil {
		t.Fatal(err)
	}
	set = h.waitFor("c gone", func(s map[string][]byte) bool { _, ok := s[cmKey("c")]; return !ok })
	if got, want := sortedKeys(set), []string{cmKey("a"), cmKey("a2")}; !slices.Equal(got, want) {
		t.Errorf("after rename away: %q, want %q", got, want)
	}
}

func TestManifestSourceDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("10-base.yaml", configMap("shared", "base"))
	h.write("20-override.yaml", configMap("shared", "override"))
	h.write("30-last.yaml", configMap("other", "x")+"---\n"+configMap("shared", "last"))
	h = startSource(t, dir)

	set := h.next()
	if got := cmValue(t, set, "shared"); got != "last" || len(set) != 2 {
		t.Fatalf("shared = %q (keys %q), want the lexically last file's", got, sortedKeys(set))
	}
	// Each overriding definition names the one it overrides.
	for source, overrides := range map[string]string{"20-override.yaml:1": "10-base.yaml:1", "30-last.yaml:8": "20-override.yaml:1"} {
		warned := false
		for _, e := range h.logs.FilterMessage("object defined twice; the later definition wins").All() {
			m := e.ContextMap()
			if m["key"] == cmKey("shared") && m["source"] == source && m["overrides"] == overrides {
				warned = true
			}
		}
		if !warned {
			t.Errorf("no warning that %s overrides %s; logs: %v", source, overrides, h.logs.All())
		}
	}

	// Removing the winners brings the first definition back.
	for _, name := range []string{"30-last.yaml", "20-override.yaml"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor("base", func(s map[string][]byte) bool { return cmValue(t, s, "shared") == "base" })
}

func TestManifestSourceSecretsStayOutOfLogs(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("s.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: "+manifesttest.SecretMarker+"\n")
	h = startSource(t, dir)
	h.next()
	for i, leak := range manifesttest.SecretLeaks {
		h.writeAtomic("s.yaml", leak)
		h.waitLog("manifest file does not parse; keeping its last good objects", "s.yaml")
		for _, e := range h.logs.TakeAll() {
			if strings.Contains(e.Message, manifesttest.SecretMarker) || strings.Contains(fmt.Sprint(e.ContextMap()), manifesttest.SecretMarker) {
				t.Errorf("case %d: log line leaks secret data: %s %v", i, e.Message, e.ContextMap())
			}
		}
	}
}

func TestManifestSourceConfigMapMount(t *testing.T) {
	// The layout the kubelet gives a ConfigMap volume: files are symlinks
	// through ..data, which is swapped atomically on update.
	dir := t.TempDir()
	mustDo(t, os.Mkdir(filepath.Join(dir, "..2026_01_01_00_00_00.1"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "..2026_01_01_00_00_00.1", "app.yaml"), []byte(configMap("app", "1")), 0o644))
	mustDo(t, os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")))
	mustDo(t, os.Symlink("..data/app.yaml", filepath.Join(dir, "app.yaml")))
	h := startSource(t, dir)
	if got := cmValue(t, h.next(), "app"); got != "1" {
		t.Fatalf("app = %q, want 1", got)
	}

	mustDo(t, os.Mkdir(filepath.Join(dir, "..2026_01_01_00_00_01.2"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "..2026_01_01_00_00_01.2", "app.yaml"), []byte(configMap("app", "2")), 0o644))
	mustDo(t, os.Symlink("..2026_01_01_00_00_01.2", filepath.Join(dir, "..data_tmp")))
	mustDo(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	mustDo(t, os.RemoveAll(filepath.Join(dir, "..2026_01_01_00_00_00.1")))
	h.waitFor("app=2", func(s map[string][]byte) bool { return cmValue(t, s, "app") == "2" })
}

func TestManifestSourceDirectoryReplaced(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "manifests")
	mustDo(t, os.Mkdir(dir, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(configMap("a", "1")), 0o644))
	h := startSource(t, dir)
	if got := cmValue(t, h.next(), "a"); got != "1" {
		t.Fatalf("a = %q", got)
	}

	// Build the new directory beside it and swap it in.
	next := filepath.Join(parent, "manifests.new")
	mustDo(t, os.Mkdir(next, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(next, "b.yaml"), []byte(configMap("b", "1")), 0o644))
	mustDo(t, os.Rename(dir, filepath.Join(parent, "manifests.old")))
	mustDo(t, os.Rename(next, dir))
	set := h.waitFor("b", func(s map[string][]byte) bool { return cmValue(t, s, "b") == "1" })
	if _, ok := set[cmKey("a")]; ok {
		t.Errorf("objects of the old directory kept: %q", sortedKeys(set))
	}

	// The new directory is watched.
	h.write("c.yaml", configMap("c", "1"))
	h.waitFor("c", func(s map[string][]byte) bool { return cmValue(t, s, "c") == "1" })
}

func TestManifestSourceResyncBackstop(t *testing.T) {
	// A symlink to a file outside the directory: changes to the target make
	// no event in the watched directory, so only the periodic rescan sees them.
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "app.yaml")
	mustDo(t, os.WriteFile(target, []byte(configMap("app", "1")), 0o644))
	mustDo(t, os.Symlink(target, filepath.Join(dir, "app.yaml")))
	h := startSource(t, dir, func(s *manifestSource) { s.resync = 100 * time.Millisecond })
	if got := cmValue(t, h.next(), "app"); got != "1" {
		t.Fatalf("app = %q, want 1", got)
	}
	mustDo(t, os.WriteFile(target, []byte(configMap("app", "2")), 0o644))
	h.waitFor("app=2", func(s map[string][]byte) bool { return cmValue(t, s, "app") == "2" })
}

func TestManifestSourceSkippedKindsLogged(t *testing.T) {
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "mixed.yaml"), []byte(
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\n"+
			"apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: old\n---\n"+configMap("a", "1")), 0o644))
	h := startSource(t, dir)
	if set := h.next(); len(set) != 1 || cmValue(t, set, "a") != "1" {
		t.Fatalf("set %q, want only the ConfigMap", sortedKeys(set))
	}
	var debug, warn bool
	for _, e := range h.logs.All() {
		m := e.ContextMap()
		switch {
		case e.Level == zapcore.DebugLevel && m["kind"] == "Deployment" && m["source"] == "mixed.yaml:1":
			debug = true
		case e.Level == zapcore.WarnLevel && m["kind"] == "Ingress" && m["source"] == "mixed.yaml:6":
			warn = true
		}
	}
	if !debug || !warn {
		t.Errorf("want a debug log for the Deployment and a warning for the old Ingress; logs: %v", h.logs.All())
	}
}

func TestManifestSourceMissingDirectory(t *testing.T) {
	src := newManifestSource(filepath.Join(t.TempDir(), "nope"), zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := src.Run(ctx, make(chan objectSet))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Run = %v, want a not-exist error", err)
	}

	file := filepath.Join(t.TempDir(), "file.yaml")
	mustDo(t, os.WriteFile(file, nil, 0o644))
	if err := newManifestSource(file, nil).Run(ctx, make(chan objectSet)); err == nil {
		t.Fatal("Run on a file: no error")
	}
}

func TestManifestSourceEmptyDirectory(t *testing.T) {
	h := startSource(t, t.TempDir())
	if set := h.next(); set == nil || len(set) != 0 {
		t.Fatalf("initial set %v, want an empty map", set)
	}
}

func TestManifestSourceSlowReceiver(t *testing.T) {
	// Changes made while nobody reads are folded into the newest set.
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	h.write("a.yaml", configMap("a", "0"))
	h = startSource(t, dir)
	for i := 1; i <= 5; i++ {
		h.writeAtomic("a.yaml", configMap("a", fmt.Sprint(i)))
		time.Sleep(30 * time.Millisecond)
	}
	h.waitFor("a=5", func(s map[string][]byte) bool { return cmValue(t, s, "a") == "5" })
	h.quiet(100 * time.Millisecond)
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
