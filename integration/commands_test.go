package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestStagesAsSeparateProcesses runs each stage as its own process on an
// external NATS, as a deployment with one stage per Deployment would, and
// restarts one of them mid-way: it catches up from the bus. With
// --metrics-addr each stage process exports its own pipeline series, and
// only the applier's the controller's.
func TestStagesAsSeparateProcesses(t *testing.T) {
	harness.Nginx(t)
	ns := harness.StartNATS(t)
	procs := newStageProcs(t, "--nats", ns.ClientURL(), "--nats-keys", ns.Keys)
	stages := map[string]*harness.Process{}
	metricsAddrs := map[string]string{}
	for _, name := range []string{"applier", "renderer", "annotations", "translator", "watcher"} {
		var extra []string
		if name == "applier" || name == "renderer" {
			metricsAddrs[name] = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
			extra = []string{"--metrics-addr", metricsAddrs[name]}
		}
		stages[name] = procs.start(name, extra...)
	}
	get := procs.served
	harness.WaitFor(t, 30*time.Second, "traffic through five stage processes", get("one.example.com"))
	checkStageProcessMetrics(t, metricsAddrs)

	stages["translator"].Stop(10 * time.Second)
	procs.ingress("two")
	stages["translator"] = procs.start("translator")
	harness.WaitFor(t, 30*time.Second, "a change made while the translator was down", get("two.example.com"))
	if err := get("one.example.com")(); err != nil {
		t.Fatalf("the first Ingress after the restart: %v", err)
	}
}

// checkStageProcessMetrics: the renderer's process exports the renderer's
// latency and no controller series; the applier's exports the applier's
// latency and the controller series.
func checkStageProcessMetrics(t *testing.T, addrs map[string]string) {
	t.Helper()
	harness.WaitFor(t, 30*time.Second, "each stage process's own metrics", func() error {
		for stage, addr := range addrs {
			samples, err := scrapeMetrics(addr)
			if err != nil {
				return err
			}
			if v, _ := findSample(samples, "switchyard_stage_latency_seconds_count", map[string]string{"stage": stage}); v < 1 {
				return fmt.Errorf("%s: stage_latency_seconds_count = %v", stage, v)
			}
			reloaded, controller := findSample(samples, "nginx_ingress_controller_config_last_reload_successful", nil)
			if controller != (stage == "applier") {
				return fmt.Errorf("%s process exports the controller series: %v", stage, controller)
			}
			if stage != "applier" {
				continue
			}
			// Its bus connection, as the applier, reads the results and
			// the annotated table.
			if reloaded != 1 {
				return fmt.Errorf("applier: config_last_reload_successful = %v", reloaded)
			}
			if _, ok := findSample(samples, "nginx_ingress_controller_orphan_ingress", map[string]string{"namespace": "default", "ingress": "one"}); !ok {
				return errors.New("applier: no orphan_ingress series for default/one")
			}
		}
		return nil
	})
}

// TestTraceShowsEveryStage follows one change through the graph.
func TestTraceShowsEveryStage(t *testing.T) {
	sy, natsAddr, keys := startTraced(t)
	bin := harness.Binary(t)
	// A listening bus admits only its identities.
	if out, err := exec.Command(bin, "trace", "--nats", "nats://"+natsAddr, "--count", "1").CombinedOutput(); err == nil {
		t.Fatalf("trace without a key was admitted:\n%s", out)
	}
	trace := harness.Start(t, bin, "trace", "--nats", "nats://"+natsAddr, "--nats-keys", keys, "--count", "40")
	harness.WaitFor(t, 10*time.Second, "trace to subscribe", func() error {
		if !strings.Contains(trace.Output.String(), "SUBJECT / KEY") {
			return fmt.Errorf("no header yet")
		}
		return nil
	})
	addTracedIngress(t, sy)
	harness.WaitFor(t, 10*time.Second, "the applier's result in the trace", func() error {
		if !strings.Contains(trace.Output.String(), "result") {
			return fmt.Errorf("trace so far:\n%s", trace.Output.String())
		}
		return nil
	})
	out := trace.Output.String()
	for _, want := range []string{"object.ingress.default.traced", "server.traced_2eexample_2ecom", "commit"} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
	// The renderer's output: a server file, or with --lua-routing a route.
	if !strings.Contains(out, "file.servers") && !strings.Contains(out, "route.traced_2eexample_2ecom") {
		t.Errorf("trace lacks the renderer's server file or route:\n%s", out)
	}
	for _, stage := range []string{"watcher", "translator", "annotations", "renderer", "applier"} {
		if !strings.Contains(out, " "+stage+" ") {
			t.Errorf("trace shows no message from %s:\n%s", stage, out)
		}
	}
}

// TestRenderPrintsWhatRunWouldApply renders the examples without NGINX:
// by default the plain hosts as Lua routes, with --lua-routing=false as
// server blocks.
func TestRenderPrintsWhatRunWouldApply(t *testing.T) {
	out, err := exec.Command(harness.Binary(t), "render", "--manifests", "../examples").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if routes := string(out); !strings.Contains(routes, "-- lua/routes.json --") || !strings.Contains(routes, `"host": "echo.switchyard.local"`) {
		t.Errorf("render output lacks the route of echo.switchyard.local:\n%s", routes)
	}
	out, err = exec.Command(harness.Binary(t), "render", "--manifests", "../examples", "--lua-routing=false").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"-- nginx.conf --", "-- servers/echo_2eswitchyard_2elocal.conf --", `server_name "echo.switchyard.local";`,
		`location = "/exact"`, `"name": "default-echo-a-http"`, `"address": "127.0.0.1"`, "secure.switchyard.local",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("render output lacks %q", want)
		}
	}
	if strings.Contains(text, "PRIVATE KEY") {
		t.Error("render printed a private key")
	}
}

// TestRenderReportsProblems: render prints every Problem on stderr (the
// Ingress or ConfigMap, field, reason, message), and --strict exits
// non-zero when an Ingress is rejected or served degraded.
func TestRenderReportsProblems(t *testing.T) {
	bin := harness.Binary(t)
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", 9))
	harness.WriteFile(t, filepath.Join(dir, "config.yaml"), configMapYAML(map[string]string{"http-snippet": "x", "datadog-collector-host": "y"}))
	harness.WriteFile(t, filepath.Join(dir, "clean.yaml"), annotatedIngressYAML("clean", nil))
	run := func(args ...string) (stdout, stderr string, err error) {
		cmd := exec.Command(bin, append([]string{"render", "--manifests", dir, "--configmap", configMapName}, args...)...)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		return string(out), errOut.String(), err
	}

	if _, stderr, err := run("--strict"); err != nil || strings.Contains(stderr, "ingress ") {
		t.Fatalf("clean Ingress with --strict: %v\n%s", err, stderr)
	}
	harness.WriteFile(t, filepath.Join(dir, "ing.yaml"), annotatedIngressYAML("degraded", map[string]string{
		"nginx.ingress.kubernetes.io/http2-push-preload": "true",
		"nginx.ingress.kubernetes.io/proxy-bdy-size":     "8m",
	}))
	stdout, stderr, err := run()
	if err != nil {
		t.Fatalf("render without --strict: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "degraded.example.com") {
		t.Fatalf("the degraded Ingress is not rendered:\n%s", stdout)
	}
	for _, want := range []string{
		"ingress default/degraded (served degraded): metadata.annotations[nginx.ingress.kubernetes.io/http2-push-preload]: AnnotationNotSupported: ",
		"ingress default/degraded (served degraded): metadata.annotations[nginx.ingress.kubernetes.io/proxy-bdy-size]: UnknownAnnotation: ",
		"configmap " + configMapName + ": data.http-snippet: Refused: ",
		"configmap " + configMapName + ": data.datadog-collector-host: NotSupported: ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, stderr, err := run("--strict"); err == nil || !strings.Contains(stderr, "0 Ingress(es) rejected, 1 served degraded") {
		t.Fatalf("--strict with a degraded Ingress: %v\n%s", err, stderr)
	}
}

func TestEchoAnswersWithTheRequest(t *testing.T) {
	bin := harness.Binary(t)
	port := harness.StartEcho(t, bin, "svc", "pod-1")
	req, _ := http.NewRequest("PUT", fmt.Sprintf("http://127.0.0.1:%d/a/b?c=d", port), nil)
	req.Host = "echo.example.com"
	req.Header.Set("X-Test", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply harness.EchoReply
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Content-Length") == "" {
		t.Errorf("headers %v", resp.Header)
	}
	if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n < 50 {
		t.Errorf("Content-Length %d", n)
	}
	want := harness.EchoReply{Path: "/a/b?c=d", Host: "echo.example.com", Method: "PUT", Proto: "HTTP/1.1",
		Namespace: "default", Service: "svc", Pod: "pod-1"}
	got := reply
	got.Headers = nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reply %+v, want %+v", got, want)
	}
	if reply.Headers["X-Test"][0] != "1" {
		t.Errorf("headers %v", reply.Headers)
	}
}
