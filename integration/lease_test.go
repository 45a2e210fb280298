package integration

import (
	"fmt"
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

// TestSplitModeOnABusCluster runs every stage as its own process, two
// translators among them, on a three-node cluster of `switchyard bus`
// with every stream and the leases kept on all three (--nats-replicas 3).
// The node leading the translator's stream is killed under steady
// traffic: no request fails, and a change made afterwards is served,
// with nobody restarted.
func TestSplitModeOnABusCluster(t *testing.T) {
	harness.Nginx(t)
	cluster := harness.StartBusCluster(t, 3)
	procs := newStageProcs(t, "--nats", cluster.ClientURLs(), "--nats-keys", cluster.Keys, "--nats-replicas", "3", "--lease-duration", "5s")
	for _, s := range [][2]string{{"applier", "applier-1"}, {"renderer", "renderer-1"}, {"annotations", "annotations-1"},
		{"translator", "translator-a"}, {"translator", "translator-b"}, {"watcher", "watcher-1"}} {
		procs.start(s[0], "--instance", s[1])
	}
	get, ingress := procs.served, procs.ingress
	harness.WaitFor(t, 90*time.Second, "traffic through the stages on the bus cluster", get("one.example.com"))

	var leader string
	harness.WaitFor(t, 30*time.Second, "the translator stream's leader", func() (err error) {
		leader, err = cluster.StreamLeader("SWITCHYARD_V1_TRANSLATOR")
		if err == nil && leader == "" {
			err = fmt.Errorf("no leader yet")
		}
		return err
	})
	steady := startSteadyTraffic(get("one.example.com"))
	for _, n := range cluster.Nodes {
		if n.Name == leader {
			_ = n.Cmd.Process.Kill()
		}
	}
	ingress("two")
	harness.WaitFor(t, 120*time.Second, "a change made after the stream's leader was killed", get("two.example.com"))
	sent, failed := steady.stop()
	if sent == 0 || len(failed) > 0 {
		t.Fatalf("%d of %d requests failed while the bus lost a node: %v", len(failed), sent, failed[:min(len(failed), 5)])
	}
	t.Logf("killed %s (leading the translator's stream); %d requests, none failed", leader, sent)
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
