package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestTwoTranslatorsPublishOnce runs two translator processes at once on
// a real NATS, each stage as its own process: only the lease holder
// publishes the translator's table (trace names the instance of every
// message), and when the holder freezes (SIGSTOP) the standby takes over
// after the lease duration, a change made meanwhile is served, and the
// old holder, thawed, publishes nothing more. Apply results name their
// applier.
func TestTwoTranslatorsPublishOnce(t *testing.T) {
	harness.Nginx(t)
	ns := harness.StartNATS(t)
	procs := newStageProcs(t, "--nats", ns.ClientURL(), "--nats-keys", ns.Keys, "--lease-duration", "5s")
	trace := harness.Start(t, procs.bin, "trace", "--nats", ns.ClientURL(), "--nats-keys", ns.Keys)
	harness.WaitFor(t, 20*time.Second, "trace to subscribe", traceHas(trace, "SUBJECT / KEY"))
	start := func(stage, instance string) *harness.Process { return procs.start(stage, "--instance", instance) }
	for _, name := range []string{"applier", "renderer", "annotations", "watcher"} {
		start(name, name+"-1")
	}
	translatorA := start("translator", "translator-a")
	get, ingress := procs.served, procs.ingress
	harness.WaitFor(t, 60*time.Second, "traffic through the stage processes", get("one.example.com"))
	translatorB := start("translator", "translator-b")
	harness.WaitFor(t, 30*time.Second, "the second translator to stand by", func() error {
		if !strings.Contains(translatorB.Output.String(), "standing by") {
			return fmt.Errorf("translator-b:\n%s", translatorB.Output.String())
		}
		return nil
	})
	ingress("two")
	harness.WaitFor(t, 30*time.Second, "a change with two translators running", get("two.example.com"))
	harness.WaitFor(t, 10*time.Second, "the applier named in its result", traceHas(trace, "result ok from applier-1"))
	lines := translatorLines(trace.Output.String())
	if len(lines) == 0 || strings.Contains(strings.Join(lines, "\n"), "from translator-b") {
		t.Fatalf("the standby published, or nobody did:\n%s", strings.Join(lines, "\n"))
	}

	// The leader freezes: the standby takes over.
	if err := translatorA.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := len(trace.Output.String())
	ingress("three")
	harness.WaitFor(t, 60*time.Second, "a change made while the leader is frozen", get("three.example.com"))
	if err := get("one.example.com")(); err != nil {
		t.Fatalf("the first Ingress after the takeover: %v", err)
	}
	if !strings.Contains(strings.Join(translatorLines(trace.Output.String()[frozenAt:]), "\n"), "from translator-b") {
		t.Fatal("the change was not published by the standby")
	}

	// Thawed, the old leader finds its lease gone and publishes nothing.
	if err := translatorA.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "the old leader to stand by", func() error {
		if !strings.Contains(translatorA.Output.String(), "lost the lease") {
			return fmt.Errorf("translator-a:\n%s", translatorA.Output.String())
		}
		return nil
	})
	thawedAt := len(trace.Output.String())
	ingress("four")
	harness.WaitFor(t, 30*time.Second, "a change after the old leader came back", get("four.example.com"))
	if after := strings.Join(translatorLines(trace.Output.String()[thawedAt:]), "\n"); strings.Contains(after, "from translator-a") {
		t.Fatalf("the old leader published after losing its lease:\n%s", after)
	}
}

// translatorLines are the trace lines of the translator's messages.
func translatorLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " translator ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func traceHas(trace *harness.Process, want string) func() error {
	return func() error {
		if !strings.Contains(trace.Output.String(), want) {
			return fmt.Errorf("trace lacks %q:\n%s", want, trace.Output.String())
		}
		return nil
	}
}

// TestSplitModeOnABusCluster runs every stage as its own process on a
// three-node cluster of `switchyard bus` with every stream and the leases
// kept on all three (--nats-replicas 3): two appliers, each with its own
// ports, state dir and control socket, and two translators. Under steady
// traffic to both appliers, the node leading the translator's stream is
// killed; two changes are made while it is down (an Ingress added, its
// backend changed), the node is started again on its store, and two more
// are made (the Ingress removed, another added). No request fails on
// either applier, each change is served by both, no stage is restarted,
// and `switchyard trace` (one per node) shows every message of the
// translator's table from one instance at a time: no generation comes
// from two translators, and one that gave way never publishes again.
func TestSplitModeOnABusCluster(t *testing.T) {
	harness.Nginx(t)
	cluster := harness.StartBusCluster(t, 3)
	procs := newStageProcs(t, "--nats", cluster.ClientURLs(), "--nats-keys", cluster.Keys, "--nats-replicas", "3", "--lease-duration", "5s")
	portB := harness.StartEcho(t, procs.bin, "echo-b", "b-1")
	harness.WriteFile(t, filepath.Join(procs.dir, "svc-b.yaml"), harness.ServiceYAML("default", "echo-b", portB))
	// One trace per node: the one on a node that stays up misses nothing
	// of the translators' messages while another is down.
	traces := map[string]*harness.Process{}
	for _, n := range cluster.Nodes {
		traces[n.Name] = harness.Start(t, procs.bin, "trace", "--nats", n.ClientURL, "--nats-keys", cluster.Keys)
		harness.WaitFor(t, 30*time.Second, "trace on "+n.Name+" to subscribe", traceHas(traces[n.Name], "SUBJECT / KEY"))
	}
	var stages []*harness.Process
	for _, s := range [][2]string{{"renderer", "renderer-1"}, {"annotations", "annotations-1"},
		{"translator", "translator-a"}, {"translator", "translator-b"}, {"watcher", "watcher-1"}} {
		// The renderer's own addresses are nobody's: the appliers' count.
		stages = append(stages, procs.start(s[0], "--instance", s[1], "--http-addr", "127.0.0.1:1", "--https-addr", "127.0.0.1:2"))
	}
	var appliers []string // their HTTP addresses
	for i := 1; i <= 2; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		stages = append(stages, procs.start("applier", "--instance", fmt.Sprintf("applier-%d", i), "--http-addr", addr,
			"--https-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "--state-dir", harness.StateDir(t)))
		appliers = append(appliers, addr)
	}
	// served: applier at addr answers for host from pod ("" for the
	// default backend's 404: no Ingress has host).
	served := func(addr, host, pod string) func() error {
		return func() error {
			r, err := harness.Do(procs.client, "GET", "http://"+addr+"/", host, nil)
			if err == nil && (pod == "" && r.Status != http.StatusNotFound || pod != "" && !servedBy(pod)(r)) {
				err = fmt.Errorf("%s %s: status %d, pod %q; want pod %q", addr, host, r.Status, podOf(r), pod)
			}
			return err
		}
	}
	change := func(what, host, pod string, timeout time.Duration) {
		t.Helper()
		for _, a := range appliers {
			harness.WaitFor(t, timeout, what+" through the applier on "+a, served(a, host, pod))
		}
	}
	change("traffic through the stages on the bus cluster", "one.example.com", "a-1", 90*time.Second)

	var leader string
	harness.WaitFor(t, 30*time.Second, "the translator stream's leader", func() (err error) {
		leader, err = cluster.StreamLeader("SWITCHYARD_V1_TRANSLATOR")
		if err == nil && leader == "" {
			err = fmt.Errorf("no leader yet")
		}
		return err
	})
	var steady []*steadyTraffic
	for _, a := range appliers {
		steady = append(steady, startSteadyTraffic(served(a, "one.example.com", "a-1")))
	}
	var killed *harness.BusNode
	for _, n := range cluster.Nodes {
		if n.Name == leader {
			killed = n
			_ = n.Cmd.Process.Kill()
		}
	}
	harness.WaitFor(t, 10*time.Second, "the killed node to exit", func() error {
		if !killed.Exited() {
			return fmt.Errorf("%s still running", killed.Name)
		}
		return nil
	})

	// Two changes while the node is down.
	harness.WriteFile(t, filepath.Join(procs.dir, "two.yaml"), harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	change("an Ingress added while the stream's leader is down", "two.example.com", "a-1", 120*time.Second)
	harness.WriteFile(t, filepath.Join(procs.dir, "two.yaml"), harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	change("a backend changed while the stream's leader is down", "two.example.com", "b-1", 60*time.Second)

	// The node comes back on its store and catches up (its /healthz
	// reports every stream and consumer it keeps current).
	killed.Process = harness.Start(t, killed.Cmd.Path, killed.Cmd.Args[1:]...)
	killed.WaitHealthy(t)

	// Two changes after it came back.
	if err := os.Remove(filepath.Join(procs.dir, "two.yaml")); err != nil {
		t.Fatal(err)
	}
	change("an Ingress removed after the node came back", "two.example.com", "", 60*time.Second)
	procs.ingress("three")
	change("an Ingress added after the node came back", "three.example.com", "a-1", 60*time.Second)

	for i, s := range steady {
		sent, failed := s.stop()
		if sent == 0 || len(failed) > 0 {
			t.Errorf("%d of %d requests to the applier on %s failed while the bus lost a node and got it back: %v",
				len(failed), sent, appliers[i], failed[:min(len(failed), 5)])
		}
		t.Logf("applier on %s: %d requests, %d failed", appliers[i], sent, len(failed))
	}
	for _, p := range stages {
		if p.Exited() {
			t.Errorf("a stage exited (nothing may restart one): %s\n%s", strings.Join(p.Cmd.Args[1:], " "), p.Output.String())
		}
	}
	for name, trace := range traces {
		if name == killed.Name {
			continue // it missed what was published while its node was down
		}
		lines := translatorLines(trace.Output.String())
		order, err := publishedOnceAtATime(lines)
		if err != nil {
			t.Errorf("trace on %s: %v:\n%s", name, err, strings.Join(lines, "\n"))
		}
		t.Logf("trace on %s: %d messages of the translator's table, from %v in turn", name, len(lines), order)
	}
	t.Logf("killed %s (leading the translator's stream) and started it again", leader)
}

// publishedOnceAtATime checks the trace lines of one stage's table, in
// the order trace printed them, for one publisher at a time: an instance
// that gave way (another published after it) never publishes again,
// generations never go back, and no generation comes from two instances
// but the one at a takeover, which the new holder may complete or commit
// again (it publishes what it finds missing, and always commits first). It
// returns the instances in the order they published.
func publishedOnceAtATime(lines []string) ([]string, error) {
	if len(lines) == 0 {
		return nil, fmt.Errorf("no message")
	}
	type run struct {
		instance    string
		first, last int
	}
	var runs []run
	from := map[int]string{} // generation: the instance that published it first
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || f[len(f)-2] != "from" {
			return nil, fmt.Errorf("no instance in %q", l)
		}
		instance := f[len(f)-1]
		gen, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("no generation in %q", l)
		}
		if len(runs) == 0 || runs[len(runs)-1].instance != instance {
			for _, r := range runs {
				if r.instance == instance {
					return nil, fmt.Errorf("%s published again after %s had taken over: %q", instance, runs[len(runs)-1].instance, l)
				}
			}
			runs = append(runs, run{instance: instance, first: gen, last: gen})
		}
		cur := &runs[len(runs)-1]
		if gen < cur.last {
			return nil, fmt.Errorf("generation %d after %d: %q", gen, cur.last, l)
		}
		cur.last = gen
		if other, ok := from[gen]; ok && other != instance {
			if prev := runs[len(runs)-2]; prev.instance != other || prev.last != gen || cur.first != gen {
				return nil, fmt.Errorf("generation %d published by %s and by %s, not at a takeover: %q", gen, other, instance, l)
			}
		} else if !ok {
			from[gen] = instance
		}
		if len(runs) > 1 && gen < runs[len(runs)-2].last {
			return nil, fmt.Errorf("generation %d after %d: %q", gen, runs[len(runs)-2].last, l)
		}
	}
	var order []string
	for _, r := range runs {
		order = append(order, r.instance)
	}
	return order, nil
}

// podOf is the pod of the echo backend that answered, or "".
func podOf(r harness.Response) string {
	if r.Echo == nil {
		return ""
	}
	return r.Echo.Pod
}

// steadyTraffic sends one request after another until stopped.
type steadyTraffic struct {
	done   chan struct{}
	result chan steadyResult
}

type steadyResult struct {
	sent   int
	failed []error
}

func startSteadyTraffic(request func() error) *steadyTraffic {
	s := &steadyTraffic{done: make(chan struct{}), result: make(chan steadyResult, 1)}
	go func() {
		var r steadyResult
		for {
			select {
			case <-s.done:
				s.result <- r
				return
			default:
			}
			r.sent++
			if err := request(); err != nil {
				r.failed = append(r.failed, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return s
}

func (s *steadyTraffic) stop() (int, []error) {
	close(s.done)
	r := <-s.result
	return r.sent, r.failed
}

// TestPublishedOnceAtATime: the check of TestSplitModeOnABusCluster's
// traces fails on two publishers at once.
func TestPublishedOnceAtATime(t *testing.T) {
	line := func(gen int, key, instance string) string {
		return fmt.Sprintf("16:34:10.800 translator  %-10d 8.78ms     -  %s from %s", gen, key, instance)
	}
	for _, c := range []struct {
		name  string
		lines []string
		ok    bool
	}{
		{"one holder", []string{line(1, "server.a", "a"), line(1, "commit", "a"), line(1, "commit", "a"), line(2, "commit", "a")}, true},
		{"a takeover", []string{line(1, "commit", "a"), line(2, "commit", "b")}, true},
		{"a takeover commits the generation again", []string{line(1, "server.a", "a"), line(1, "commit", "a"), line(1, "commit", "b"), line(2, "commit", "b")}, true},
		{"both publish", []string{line(1, "commit", "a"), line(1, "commit", "b"), line(2, "commit", "a"), line(2, "commit", "b")}, false},
		{"the old holder comes back", []string{line(1, "commit", "a"), line(2, "commit", "b"), line(3, "commit", "a")}, false},
		{"the new holder publishes an old generation", []string{line(1, "commit", "a"), line(2, "commit", "a"), line(1, "commit", "b")}, false},
		{"a generation both published before", []string{line(1, "commit", "a"), line(2, "commit", "a"), line(2, "commit", "b"), line(1, "commit", "b")}, false},
		{"no instance", []string{"16:34:10.800 translator  1 8.78ms - commit"}, false},
		{"nothing", nil, false},
	} {
		if _, err := publishedOnceAtATime(c.lines); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
