package plugins_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"switchyard.dev/switchyard/plugins"
)

// heavy are the packages (and their subpackages) a plugin must not link.
var heavy = []string{
	"github.com/nats-io/nats-server/v2",
	"github.com/nats-io/nats.go",
	"k8s.io/client-go",
	"k8s.io/api",
	"go.uber.org/zap",
	"switchyard.dev/switchyard/stages",
	"switchyard.dev/switchyard/internal",
}

// heavyDeps lists what pkg links of heavy, and the bus itself (bus/features
// is the light leaf a plugin may link).
func heavyDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for _, dep := range strings.Fields(string(out)) {
		bad := dep == "switchyard.dev/switchyard/bus"
		for _, h := range heavy {
			bad = bad || dep == h || strings.HasPrefix(dep, h+"/")
		}
		if bad {
			found = append(found, dep)
		}
	}
	return found
}

// TestExampleLinksNoController: a plugin built against the SDK links
// neither the bus nor NATS, client-go or zap (issue 11): the SDK and
// bus/features import nothing heavy. Nor does switchyard-plugins.
func TestExampleLinksNoController(t *testing.T) {
	for _, pkg := range []string{
		"switchyard.dev/switchyard/plugins/examples/responseheader",
		// The built-ins' own binary stays as small.
		"switchyard.dev/switchyard/plugins/builtin/switchyard-plugins",
	} {
		if found := heavyDeps(t, pkg); len(found) > 0 {
			t.Errorf("%s links %v", pkg, found)
		}
	}
	// The check itself: the controller links all of them.
	found := strings.Join(heavyDeps(t, "switchyard.dev/switchyard"), "\n")
	for _, h := range append(heavy, "switchyard.dev/switchyard/bus") {
		if !strings.Contains(found, h) {
			t.Errorf("the controller does not link %s: the check cannot see it", h)
		}
	}
}

type oneAtATime struct{ calls *[]string }

func (oneAtATime) Describe() plugins.Description { return plugins.Description{Name: "one"} }

func (p oneAtATime) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	*p.calls = append(*p.calls, in.Name)
	if in.Annotations["x"] == "bad" {
		return plugins.Features{}, []plugins.Error{plugins.Errorf("x", "bad value")}
	}
	return plugins.Features{ResponseHeaders: []plugins.Header{{Name: "X", Value: in.Annotations["x"]}}}, nil
}

func TestPerIngress(t *testing.T) {
	var calls []string
	p := plugins.PerIngress(oneAtATime{&calls})
	if p.Describe().Name != "one" {
		t.Fatalf("Describe: %+v", p.Describe())
	}
	batch := []plugins.Ingress{
		{Namespace: "a", Name: "first", Annotations: map[string]string{"x": "1"}},
		{Namespace: "b", Name: "second", Annotations: map[string]string{"x": "bad"}},
	}
	results, err := p.Apply(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || strings.Join(calls, ",") != "first,second" {
		t.Fatalf("results %+v, calls %v", results, calls)
	}
	if r := results[0]; r.Namespace != "a" || r.Name != "first" || len(r.Errors) != 0 || r.Features.ResponseHeaders[0].Value != "1" {
		t.Errorf("first: %+v", r)
	}
	if r := results[1]; r.Namespace != "b" || r.Name != "second" || len(r.Errors) != 1 || r.Errors[0].Key != "x" {
		t.Errorf("second: %+v", r)
	}

	// A call the host gave up on stops early, with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = nil
	if _, err := p.Apply(ctx, batch); !errors.Is(err, context.Canceled) || len(calls) != 0 {
		t.Errorf("cancelled: err %v, calls %v", err, calls)
	}
}

func TestServeRefusesToRunByHand(t *testing.T) {
	t.Setenv("SWITCHYARD_ANNOTATION_PLUGIN", "")
	if err := plugins.Serve(plugins.PerIngress(oneAtATime{new([]string)})); !errors.Is(err, plugins.ErrNotStartedByHost) {
		t.Errorf("Serve run by hand: %v", err)
	}
	if err := plugins.Serve(nil); err == nil {
		t.Error("Serve(nil) returned nil")
	}
}
