package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// bigIngressYAML is an Ingress of about 1.26 MB (a filler annotation):
// etcd takes it, the bus's 1 MiB messages cannot.
func bigIngressYAML(ns, name, host string) string {
	return harness.AnnotatedIngressYAML(ns, name, host, map[string]string{"example.com/filler": strings.Repeat("x", 1_260_000)},
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
}

// longSegment makes each path about 250 bytes: 1,860 of them make a
// server file larger than one bus message. (NGINX matches a location's
// prefix on at most 255 bytes: longer paths are not used here.)
var longSegment = strings.Repeat("segment/", 30)

// manyPaths is n Exact paths /<prefix>-<i>/<longSegment> to service.
func manyPaths(prefix string, n int, service string) []harness.Path {
	paths := make([]harness.Path, n)
	for i := range paths {
		paths[i] = harness.Path{Path: fmt.Sprintf("/%s-%d/%s", prefix, i, longSegment), Type: "Exact", Service: service}
	}
	return paths
}

// waitLog waits for the switchyard log to say something.
func (e *env) waitLog(what string) {
	e.t.Helper()
	harness.WaitFor(e.t, 30*time.Second, "the log to say "+what, func() error {
		if !strings.Contains(e.sy.Output.String(), what) {
			return fmt.Errorf("not logged yet")
		}
		return nil
	})
}

// TestOversizedIngress: an Ingress over the bus limit present at start
// does not keep NGINX from starting, and added while running freezes
// nothing; it is reported with the limit, and changes made while it is
// there (and after it is gone) are applied.
func TestOversizedIngress(t *testing.T) {
	e := newEnv(t, map[string]string{
		"shop.yaml": harness.IngressYAML("default", "shop", "shop.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"big.yaml":  bigIngressYAML("default", "big", "big.example.com"),
	})
	e.eventually("shop.example.com", "/", "the good host served at start", servedBy("a-1"))
	e.eventually("big.example.com", "/", "the big Ingress not served", status(404))
	e.waitLog("TooLarge")

	// Added while running: later changes in other Ingresses still apply.
	e.write("big2.yaml", bigIngressYAML("default", "big2", "big2.example.com"))
	e.write("two.yaml", harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.eventually("two.example.com", "/", "a change made with the big Ingress present", servedBy("b-1"))
	e.write("shop.yaml", harness.IngressYAML("default", "shop", "shop.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.eventually("shop.example.com", "/", "another change made with the big Ingress present", servedBy("b-1"))

	// Removed: what was made meanwhile stays, and later changes apply.
	for _, f := range []string{"big.yaml", "big2.yaml"} {
		if err := os.Remove(filepath.Join(e.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	e.write("three.yaml", harness.IngressYAML("default", "three", "three.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.eventually("three.example.com", "/", "a change after the big Ingresses went", servedBy("a-1"))
	e.eventually("two.example.com", "/", "the change made meanwhile", servedBy("b-1"))
	e.eventually("shop.example.com", "/", "the other change made meanwhile", servedBy("b-1"))
}

// TestForeignPathsOnHost: another namespace adds 1,700 paths to a
// tenant's host in one Ingress: over the per-Ingress limit, rejected and
// reported. Split across three Ingresses, 1,860 are served, the host's
// server file is larger than one bus message (published in parts), and the
// owner's own changes keep applying.
func TestForeignPathsOnHost(t *testing.T) {
	e := newEnv(t, map[string]string{
		"other-one.yaml": harness.IngressYAML("other", "one", "app.example.com", manyPaths("one", 1700, "echo-b")...),
	})
	e.write("tenant.yaml", harness.ServiceYAML("tenant", "echo-a", e.portA)+"---\n"+
		harness.IngressYAML("tenant", "app", "app.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.write("other-svc.yaml", harness.ServiceYAML("other", "echo-b", e.portB))
	e.eventually("app.example.com", "/", "the owner's host", servedBy("a-1"))
	e.waitLog("TooManyPaths")
	e.eventually("app.example.com", "/one-5/"+longSegment, "no path of the rejected Ingress", servedBy("a-1"))

	e.write("other-more.yaml", harness.IngressYAML("other", "two", "app.example.com", manyPaths("two", 620, "echo-b")...)+
		"---\n"+harness.IngressYAML("other", "three", "app.example.com", manyPaths("three", 620, "echo-b")...)+
		"---\n"+harness.IngressYAML("other", "four", "app.example.com", manyPaths("four", 620, "echo-b")...))
	e.eventually("app.example.com", "/three-619/"+longSegment, "the foreign paths", servedBy("b-1"))
	files, _ := filepath.Glob(filepath.Join(e.sy.Prefix(), "conf", "servers", "app*.conf"))
	if len(files) != 1 {
		t.Fatalf("server files of app.example.com: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() <= bus.MaxPayload {
		t.Fatalf("the server file should be larger than one bus message to test its split: %v %v", fi.Size(), err)
	}

	e.write("tenant.yaml", harness.ServiceYAML("tenant", "echo-a", e.portA, e.portA2)+"---\n"+
		harness.IngressYAML("tenant", "app", "app.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}, harness.Path{Path: "/new", Type: "Prefix", Service: "echo-a"}))
	e.eventually("app.example.com", "/new", "the owner's new path", status(200))
	e.eventually("app.example.com", "/", "the owner's new endpoint", servedBy("a-2"))
}
