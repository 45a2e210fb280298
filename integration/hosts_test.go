package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestUnicodeHostsAreNotFolded: a host written with a letter Unicode folds
// to ASCII ('İ', the Kelvin sign) is refused with a Problem, never served
// under the folded name; the other Ingresses stay served.
func TestUnicodeHostsAreNotFolded(t *testing.T) {
	root := harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}
	e := newEnv(t, map[string]string{
		"good.yaml":   harness.IngressYAML("default", "good", "good.test", root),
		"dotted.yaml": harness.IngressYAML("default", "dotted", "uniİ.test", root),
		"kelvin.yaml": harness.IngressYAML("default", "kelvin", "\u212aelvin.test", root),
	})
	e.eventually("good.test", "/", "the ASCII host", servedBy("a-1"))
	harness.WaitFor(t, changeTimeout, "both Unicode hosts reported", func() error {
		problems := problemsLogged(t, e.sy.Output.String())
		for _, name := range []string{"default/dotted", "default/kelvin"} {
			if !slices.ContainsFunc(problems[name], func(m string) bool { return strings.Contains(m, "only ASCII names are served") }) {
				return fmt.Errorf("%s: problems %q", name, problems[name])
			}
		}
		return nil
	})
	for _, folded := range []string{"unii.test", "kelvin.test"} {
		if r, err := e.sy.Get(folded, "/"); err != nil || r.Status != 404 {
			t.Errorf("%s answered %d (%v): a Unicode host must not be served under its folded name", folded, r.Status, err)
		}
	}
}

// TestHostOwnershipNamespace: with --host-ownership=namespace, another
// namespace's Ingress for a host tenant owns adds nothing to it (not even
// a longer path next to tenant's), is reported naming the owner, and is
// still served on its own host.
func TestHostOwnershipNamespace(t *testing.T) {
	bin := harness.Binary(t)
	e := &env{t: t, dir: t.TempDir()}
	e.portA = harness.StartEcho(t, bin, "echo-a", "a-1")
	e.portB = harness.StartEcho(t, bin, "echo-b", "b-1")
	e.write("class.yaml", harness.ClassYAML)
	e.write("services.yaml", harness.ServiceYAML("tenant", "echo-a", e.portA)+"---\n"+harness.ServiceYAML("other", "echo-b", e.portB))
	created := func(yaml, ts string) string {
		return strings.Replace(yaml, "namespace: ", "creationTimestamp: \""+ts+"\", namespace: ", 1)
	}
	e.write("tenant.yaml", created(harness.IngressYAML("tenant", "app", "app.test",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}), "2026-01-01T00:00:00Z"))
	e.write("other.yaml", created(harness.IngressYAML("other", "grab", "app.test",
		harness.Path{Path: "/admin", Type: "Prefix", Service: "echo-b"})+"  - host: own.test\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: echo-b, port: {name: http}}}}\n",
		"2026-02-01T00:00:00Z"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--host-ownership", "namespace")

	e.eventually("own.test", "/", "other's own host", servedBy("b-1"))
	e.eventually("app.test", "/admin", "tenant's host, whole", servedBy("a-1"))
	harness.WaitFor(t, changeTimeout, "other's rule for app.test reported", func() error {
		problems := problemsLogged(t, e.sy.Output.String())["other/grab"]
		if !slices.ContainsFunc(problems, func(m string) bool { return strings.Contains(m, "belongs to namespace tenant") }) {
			return fmt.Errorf("problems of other/grab: %q", problems)
		}
		return nil
	})
}
