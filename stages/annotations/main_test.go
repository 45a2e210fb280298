package annotations

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
)

// The host tests run real plugin processes: the test binary started again
// with testPluginEnv set serves one of the test plugins below instead of
// running the tests (see TestMain), so no mock of go-plugin is involved.
const (
	testPluginEnv = "SWITCHYARD_TEST_PLUGIN"
	// testCallsEnv names a file the plugin appends one line per Apply call
	// to, with the batch's size, so a test can count calls across processes
	// (and across restarts of the plugin).
	testCallsEnv = "SWITCHYARD_TEST_PLUGIN_CALLS"
	// testPluginSet as testPluginEnv serves every test plugin in one
	// process, as the built-ins are served.
	testPluginSet = "all"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(testPluginEnv); name == testPluginSet {
		if err := plugins.ServeSet(testPlugins); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	} else if name != "" {
		p, ok := testPlugins[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no test plugin %q\n", name)
			os.Exit(2)
		}
		if err := plugins.Serve(p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Keys of the test plugins.
const (
	headerKey   = "test.example.com/header"
	riskyKey    = "test.example.com/risky"
	snippetKey  = bus.DefaultAnnotationsPrefix + "/test-snippet"
	otherKey    = "test.example.com/other"
	sleepValue  = "sleep"    // the header plugin sleeps longer than any CallTimeout the tests set
	forgedValue = "forged"   // the header plugin returns a header value the host must refuse
	rejectValue = "rejectme" // the header plugin rejects the Ingress itself
)

var testPlugins = map[string]plugins.Plugin{
	"header": headerPlugin{name: "header", annotations: []plugins.Annotation{
		{Key: headerKey, Pattern: `[a-z0-9-]{1,32}`, Risk: plugins.RiskLow, Scope: plugins.ScopeIngress},
		{Key: riskyKey, Pattern: `[a-z]+`, Risk: plugins.RiskCritical, Scope: plugins.ScopeIngress},
		{Key: snippetKey, Pattern: `.*`, Risk: plugins.RiskLow, Scope: plugins.ScopeLocation},
	}},
	// dup claims headerKey, which "header" owns: the host must refuse it.
	"dup": headerPlugin{name: "dup", annotations: []plugins.Annotation{
		{Key: otherKey, Pattern: `.*`, Risk: plugins.RiskLow},
		{Key: headerKey, Pattern: `.*`, Risk: plugins.RiskLow},
	}},
	// other owns a key of its own, to show the first two are unaffected.
	"other": headerPlugin{name: "other", annotations: []plugins.Annotation{
		{Key: otherKey, Pattern: `[a-z]+`, Risk: plugins.RiskLow},
	}},
}

// headerPlugin answers X-<name>: <value of its first key> for each Ingress.
type headerPlugin struct {
	name        string
	annotations []plugins.Annotation
}

func (p headerPlugin) Describe() plugins.Description {
	return plugins.Description{Name: p.name, Doc: "test plugin", Annotations: p.annotations}
}

func (p headerPlugin) Apply(_ context.Context, batch []plugins.Ingress) ([]plugins.Result, error) {
	if path := os.Getenv(testCallsEnv); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%d\n", len(batch))
			f.Close()
		}
	}
	out := make([]plugins.Result, 0, len(batch))
	for _, in := range batch {
		r := plugins.Result{Namespace: in.Namespace, Name: in.Name}
		value := in.Annotations[p.annotations[0].Key]
		switch value {
		case sleepValue:
			time.Sleep(5 * time.Second)
		case forgedValue:
			value = `x"; return 200 "$host`
		case rejectValue:
			r.Errors = append(r.Errors, plugins.Errorf(p.annotations[0].Key, "the plugin says no"))
		}
		if value != "" {
			r.Features.ResponseHeaders = []plugins.Header{{Name: "X-" + p.name, Value: value}}
		}
		out = append(out, r)
	}
	return out, nil
}
