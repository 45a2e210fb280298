package integration

import (
	"fmt"
	"path/filepath"
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
	bin := harness.Binary(t)
	ns := harness.StartNATS(t)

	dir := t.TempDir()
	port := harness.StartEcho(t, bin, "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	ingress := func(name string) {
		harness.WriteFile(t, filepath.Join(dir, name+".yaml"), harness.IngressYAML("default", name, name+".example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	}
	ingress("one")

	trace := harness.Start(t, bin, "trace", "--nats", ns.ClientURL(), "--nats-keys", ns.Keys)
	harness.WaitFor(t, 20*time.Second, "trace to subscribe", func() error {
		if !strings.Contains(trace.Output.String(), "SUBJECT / KEY") {
			return fmt.Errorf("no header yet")
		}
		return nil
	})

	httpAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	common := []string{"--nats", ns.ClientURL(), "--nats-keys", ns.Keys, "--manifests", dir, "--state-dir", harness.StateDir(t),
		"--http-addr", httpAddr, "--https-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "--worker-processes", "1",
		"--lease-duration", "5s"}
	start := func(stage, instance string) *harness.Process {
		return harness.Start(t, bin, append([]string{"stage", stage, "--instance", instance}, common...)...)
	}
	for _, name := range []string{"applier", "renderer", "annotations", "watcher"} {
		start(name, name+"-1")
	}
	translatorA := start("translator", "translator-a")
	client := harness.NewClient()
	get := func(host string) func() error {
		return func() error {
			r, err := harness.Do(client, "GET", "http://"+httpAddr+"/", host, nil)
			if err == nil && !servedBy("a-1")(r) {
				err = fmt.Errorf("status %d", r.Status)
			}
			return err
		}
	}
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
