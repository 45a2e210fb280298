package pluginhost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"switchyard.dev/switchyard/plugins"
)

// launchBuilt builds the plugin program pkg and launches it with args.
func launchBuilt(t testing.TB, pkg string, args ...string) *Client {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	c, err := Launch(exec.Command(bin, args...), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

// TestLaunchExamplePlugin runs the example plugin, built from source, as a
// real process and calls it over protocol version 1.
func TestLaunchExamplePlugin(t *testing.T) {
	c := launchBuilt(t, "switchyard.dev/switchyard/plugins/examples/responseheader")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := c.Describe(ctx)
	if err != nil || desc.Name != "responseheader" || len(desc.Annotations) != 1 {
		t.Fatalf("Describe: %+v, %v", desc, err)
	}
	if err := c.Ping(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	key := desc.Annotations[0].Key
	results, err := c.Apply(ctx, []plugins.Ingress{
		{Namespace: "ns", Name: "a", Annotations: map[string]string{key: "X-Test: one"}},
		{Namespace: "ns", Name: "b", Annotations: map[string]string{key: "X-Other:two"}},
	})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := map[string]plugins.Header{"a": {Name: "X-Test", Value: "one"}, "b": {Name: "X-Other", Value: "two"}}
	if len(results) != len(want) {
		t.Fatalf("results: %+v", results)
	}
	for _, r := range results {
		if h := r.Features.ResponseHeaders; r.Namespace != "ns" || len(h) != 1 || h[0] != want[r.Name] || len(r.Errors) > 0 {
			t.Errorf("result %+v, want header %+v", r, want[r.Name])
		}
	}
	if c.Pid() == 0 || c.Exited() {
		t.Errorf("pid %d, exited %v", c.Pid(), c.Exited())
	}
	c.Kill()
	if !c.Exited() {
		t.Error("the plugin runs on after Kill")
	}
}

// lockedBuffer is a log output several goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestGroupKillIsGraceful: the plugins of a group's process are stopped
// together (the host's supervisors all stop at once), and the process is
// asked once to exit: before, every Kill after the first found the
// connection closing and sent SIGKILL while the process was exiting.
func TestGroupKillIsGraceful(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "responseheader")
	if out, err := exec.Command("go", "build", "-o", bin, "switchyard.dev/switchyard/plugins/examples/responseheader").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var logged lockedBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})
	group := NewGroup(func() *exec.Cmd { return exec.Command(bin) })
	var clients []*Client
	for _, name := range []string{"one", "two", "three", "four"} {
		c, err := group.Client(name, logger)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	t.Cleanup(clients[0].Kill)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Kill()
		}()
	}
	wg.Wait()
	for i, c := range clients {
		if !c.Exited() {
			t.Errorf("client %d: the process runs on after Kill returned", i)
		}
	}
	// go-plugin's log of a second Kill while the first waits (a process
	// slower than its 2 s to exit, on a loaded machine, may still be
	// killed: that is not this test's concern).
	if strings.Contains(logged.String(), "error closing client during Kill") {
		t.Errorf("a second Kill found the connection closing and killed the process:\n%s", logged.String())
	}
}

// TestKillRemovesSocketOfDeadPlugin: a plugin that died (here SIGKILL, as
// the OOM killer would) leaves its unix socket; stopping its client
// removes it, so restarts do not fill the temporary directory.
func TestKillRemovesSocketOfDeadPlugin(t *testing.T) {
	c := launchBuilt(t, "switchyard.dev/switchyard/plugins/examples/responseheader")
	if c.socket == "" {
		t.Fatal("no unix socket recorded")
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !c.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plugin runs on after SIGKILL")
		}
	}
	if _, err := os.Stat(c.socket); err != nil {
		t.Fatalf("the dead plugin's socket: %v (want it left, as before Kill)", err)
	}
	c.Kill()
	if _, err := os.Stat(c.socket); !os.IsNotExist(err) {
		os.Remove(c.socket)
		t.Errorf("socket %s left behind after Kill (%v)", c.socket, err)
	}
}
