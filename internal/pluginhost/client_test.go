package pluginhost

import (
	"context"
	"os/exec"
	"path/filepath"
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
