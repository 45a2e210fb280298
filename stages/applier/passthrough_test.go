package applier

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// dirNames lists dir's entries, hidden ones included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestPassthroughFilesSync: the first sync empties what an earlier run
// left; each host's file is written readable by the workers, replaced by
// a rename (a reader that opened the old file reads it whole), and removed
// when the host goes; an unchanged file is not written again.
func TestPassthroughFilesSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "passthrough")
	if err := os.MkdirAll(filepath.Join(dir, "stale-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gone.example.com", ".pass.example.com.123"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("10.9.9.9:1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &passthroughFiles{dir: dir}
	changed, err := p.sync(map[string]string{"pass.example.com": "10.0.0.1:443\n", "empty.example.com": ""})
	if err != nil || !changed {
		t.Fatalf("first sync: changed %v, %v", changed, err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"empty.example.com", "pass.example.com"}) {
		t.Fatalf("directory holds %v", got)
	}
	info, err := os.Stat(filepath.Join(dir, "pass.example.com"))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("file mode %v (%v), want 0644", info.Mode(), err)
	}
	if dirInfo, _ := os.Stat(dir); dirInfo.Mode().Perm() != 0o755 {
		t.Fatalf("directory mode %v, want 0755", dirInfo.Mode())
	}

	old, err := os.Open(filepath.Join(dir, "pass.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if changed, err := p.sync(map[string]string{"pass.example.com": "10.0.0.2:443\n10.0.0.3:443\n"}); err != nil || !changed {
		t.Fatalf("second sync: changed %v, %v", changed, err)
	}
	if got := readString(t, filepath.Join(dir, "pass.example.com")); got != "10.0.0.2:443\n10.0.0.3:443\n" {
		t.Fatalf("new content %q", got)
	}
	if data, _ := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(old.Fd()))); string(data) != "10.0.0.1:443\n" {
		t.Fatalf("a reader of the old file read %q: not replaced by a rename", data)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"pass.example.com"}) {
		t.Fatalf("after the second sync the directory holds %v", got)
	}
	if changed, err := p.sync(map[string]string{"pass.example.com": "10.0.0.2:443\n10.0.0.3:443\n"}); err != nil || changed {
		t.Fatalf("same hosts again: changed %v, %v", changed, err)
	}
}

// TestPassthroughFilesRefuseBadNames: a host that is not a host name is
// never a path: nothing is written outside the directory, the error names
// it, and the good hosts are still written.
func TestPassthroughFilesRefuseBadNames(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "passthrough")
	p := &passthroughFiles{dir: dir}
	for _, bad := range []string{"../escape", "..", ".", "a/b", "UPPER.example.com", "", "x\n.example.com"} {
		_, err := p.sync(map[string]string{bad: "10.0.0.1:443\n", "good.example.com": "10.0.0.2:443\n"})
		if err == nil || !strings.Contains(err.Error(), "refusing host") {
			t.Errorf("host %q: error %v", bad, err)
		}
	}
	if got := dirNames(t, root); !slices.Equal(got, []string{"passthrough"}) {
		t.Fatalf("written outside the directory: %v", got)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"good.example.com"}) {
		t.Fatalf("directory holds %v", got)
	}
	if _, err := (&passthroughFiles{}).sync(map[string]string{"good.example.com": ""}); err == nil {
		t.Fatal("endpoints accepted by an applier without a passthrough directory")
	}
	if changed, err := (&passthroughFiles{}).sync(nil); err != nil || changed {
		t.Fatalf("no passthrough: changed %v, %v", changed, err)
	}
}

// TestDesiredTablePassthrough: the renderer's passthrough values become the
// files' contents; a value whose host or endpoints the script would not
// accept is not understood.
func TestDesiredTablePassthrough(t *testing.T) {
	table := newDesiredTable(func(s string) string { return s })
	put := func(host string, v any) error {
		data, _ := json.Marshal(v)
		return table.update(bus.Snapshot{Puts: map[string][]byte{bus.Key(bus.KindPassthrough, host): data}})
	}
	if err := put("pass.example.com", bus.PassthroughEndpoints{Host: "pass.example.com", Endpoints: []string{"10.0.0.1:443", "[fd00::1]:443"}}); err != nil {
		t.Fatal(err)
	}
	if got := table.desired.Passthrough["pass.example.com"]; got != "10.0.0.1:443\n[fd00::1]:443\n" {
		t.Fatalf("file content %q", got)
	}
	for _, tc := range []struct {
		host string
		v    bus.PassthroughEndpoints
	}{
		{"other.example.com", bus.PassthroughEndpoints{Host: "pass.example.com"}},
		{"../x", bus.PassthroughEndpoints{Host: "../x"}},
		{"bad.example.com", bus.PassthroughEndpoints{Host: "bad.example.com", Endpoints: []string{"10.0.0.1:443\n10.0.0.2:1"}}},
		{"name.example.com", bus.PassthroughEndpoints{Host: "name.example.com", Endpoints: []string{"backend.local:443"}}},
	} {
		if err := put(tc.host, tc.v); err == nil {
			t.Errorf("%q → %+v understood", tc.host, tc.v)
		}
		// The renderer's next value replaces it.
		table = newDesiredTable(func(s string) string { return s })
	}
}

// TestSyncPassthroughKeepsUntilReload: while a reload is coming, a host
// the running stream file still passes through keeps its file; after it,
// the file goes.
func TestSyncPassthroughKeepsUntilReload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "passthrough")
	s := &Stage{passthrough: &passthroughFiles{dir: dir}}
	var res bus.ApplyResult
	var errs []error
	s.syncPassthrough(map[string]string{"a.example.com": "10.0.0.1:1\n", "b.example.com": "10.0.0.2:1\n"}, false, &res, &errs)
	s.syncPassthrough(map[string]string{"a.example.com": "10.0.0.3:1\n"}, true, &res, &errs)
	if got := dirNames(t, dir); len(errs) > 0 || !slices.Equal(got, []string{"a.example.com", "b.example.com"}) || !res.DynamicUpdated {
		t.Fatalf("before the reload: %v (%v)", got, errs)
	}
	if got := readString(t, filepath.Join(dir, "a.example.com")); got != "10.0.0.3:1\n" {
		t.Fatalf("kept host not updated: %q", got)
	}
	s.syncPassthrough(map[string]string{"a.example.com": "10.0.0.3:1\n"}, false, &res, &errs)
	if got := dirNames(t, dir); len(errs) > 0 || !slices.Equal(got, []string{"a.example.com"}) {
		t.Fatalf("after the reload: %v (%v)", got, errs)
	}
}

// FuzzPassthroughValue: whatever key and value the renderer's table holds
// for a passthrough host, the applier either refuses it or writes one file
// directly in its directory whose lines are all "ip:port".
func FuzzPassthroughValue(f *testing.F) {
	f.Add("pass.example.com", []byte(`{"host":"pass.example.com","endpoints":["10.0.0.1:443","[fd00::1]:443"]}`))
	f.Add("../x", []byte(`{"host":"../x","endpoints":[]}`))
	f.Add("a.example.com", []byte(`{"host":"a.example.com","endpoints":["10.0.0.1:443\n../../x"]}`))
	f.Fuzz(func(t *testing.T, host string, data []byte) {
		content, err := decodePassthrough(host, data)
		if err != nil {
			return
		}
		for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
			if line != "" && !bus.PassthroughEndpointPattern.MatchString(line) {
				t.Fatalf("line %q accepted", line)
			}
		}
		root := t.TempDir()
		dir := filepath.Join(root, "passthrough")
		if _, err := (&passthroughFiles{dir: dir}).sync(map[string]string{host: content}); err != nil {
			t.Fatalf("accepted host %q not written: %v", host, err)
		}
		if got := dirNames(t, dir); !slices.Equal(got, []string{host}) || !slices.Equal(dirNames(t, root), []string{"passthrough"}) {
			t.Fatalf("host %q: directory holds %v", host, got)
		}
	})
}
