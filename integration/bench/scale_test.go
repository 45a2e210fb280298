package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/renderer"
	"switchyard.dev/switchyard/stages/translator"
)

const (
	startupTimeout = 5 * time.Minute // start to the last host answering
	// One change to traffic on it. The server-block path at 10,000
	// Ingresses reloads a 12 MiB configuration per change (about 30 s of
	// nginx -t and master parsing when quiet, twice that on a loaded
	// machine, where 2 minutes were once not enough).
	changeTimeout = 4 * time.Minute
	startupPoll   = 20 * time.Millisecond
	changePoll    = 5 * time.Millisecond
	changes       = 20
)

// TestBenchScale reports, from one run with SWITCHYARD_SCALE_N Ingresses
// (10,000 by default), each with its own host, Service and EndpointSlice:
// the pure translate and render times and the rendered size, nginx -t on
// that configuration, and with the real binary the start-up time, a
// one-Ingress change and a one-endpoint change to traffic, memory and the
// configuration on disk. Timings are reported, never asserted; the test
// fails only when a request is never answered.
// settleTime is how long the scale benchmark waits without changes before
// it measures memory a last time: longer than the controller's quiet
// period before it returns memory.
const settleTime = 20 * time.Second

func TestBenchScale(t *testing.T) {
	requireBench(t)
	nginx := harness.Nginx(t)
	n := scaleN(t)
	testStart := time.Now()

	var rep strings.Builder
	line := func(name, format string, args ...any) {
		fmt.Fprintf(&rep, "%-42s %s\n", name, fmt.Sprintf(format, args...))
	}
	section := func(title string) { fmt.Fprintf(&rep, "-- %s\n", title) }
	var failures []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		failures = append(failures, msg)
		line("FAILED", "%s", msg)
	}
	fmt.Fprintf(&rep, "\n%s\n", strings.Repeat("=", 100))
	fmt.Fprintf(&rep, "scale: %d Ingresses, each with its own host, Service and EndpointSlice (%d CPUs, GOMAXPROCS=%d)\n",
		n, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	defer func() {
		line("test wall time", "%s", time.Since(testStart).Round(100*time.Millisecond))
		t.Log(rep.String())
		for _, f := range failures {
			t.Error(f)
		}
	}()

	// 1. Pure, in process: typed objects in, files out.
	section("pure, in process: translator.Translate + renderer.Render on typed objects, 5 runs")
	snap := scaleSnapshot(n, 8081)
	translate := series{name: "translate"}
	render := series{name: "render"}
	full := series{name: "translate + render (full)"}
	var art renderer.Artifacts
	var allocated uint64
	for range 5 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		model := translator.Translate(translator.DefaultConfig(), snap)
		t1 := time.Now()
		a, errs := renderer.Render(renderer.DefaultConfig(), model)
		t2 := time.Now()
		runtime.ReadMemStats(&after)
		translate.samples = append(translate.samples, t1.Sub(t0))
		render.samples = append(render.samples, t2.Sub(t1))
		full.samples = append(full.samples, t2.Sub(t0))
		allocated = after.TotalAlloc - before.TotalAlloc
		if len(errs) > 0 {
			t.Fatalf("render: %d errors, first: %v", len(errs), errs[0])
		}
		if len(model.Servers) != n+1 {
			t.Fatalf("model has %d servers, want %d (one per host and the default)", len(model.Servers), n+1)
		}
		for key, info := range model.Ingresses {
			if info.Rejected || len(info.Problems) > 0 {
				t.Fatalf("%s: rejected=%v problems=%v", key, info.Rejected, info.Problems)
			}
		}
		art = a
	}
	var renderedBytes int64
	for _, content := range art.Files {
		renderedBytes += int64(len(content))
	}
	backendsJSON, err := json.Marshal(art.Backends)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&rep, translate)
	fmt.Fprintln(&rep, render)
	fmt.Fprintln(&rep, full)
	line("allocated per translate + render", "%s", mib(int64(allocated)))
	line("rendered configuration", "%s in %d files, %d bytes per Ingress (nginx.conf %d bytes)",
		mib(renderedBytes), len(art.Files), renderedBytes/int64(n), len(art.Files[renderer.MainFile]))
	line("Lua backends payload", "%s in %d backends (JSON of Artifacts.Backends)", mib(int64(len(backendsJSON))), len(art.Backends))

	// 2. nginx -t on exactly that configuration.
	prefix := harness.Prefix(t, art.Files)
	nginxTest := series{name: "nginx -t on it (3 runs)"}
	for range 3 {
		begin := time.Now()
		harness.NginxTest(t, nginx, prefix)
		nginxTest.samples = append(nginxTest.samples, time.Since(begin))
	}
	fmt.Fprintln(&rep, nginxTest)

	// 2b. The same with Lua routing: the plain hosts become routes.
	luaCfg := renderer.DefaultConfig()
	luaCfg.LuaRouting = true
	begin := time.Now()
	luaArt, errs := renderer.Render(luaCfg, translator.Translate(translator.DefaultConfig(), snap))
	luaFull := time.Since(begin)
	if len(errs) > 0 {
		t.Fatalf("render with lua routing: %v", errs[0])
	}
	routesJSON, _ := json.Marshal(luaArt.Routes)
	line("with lua routing: translate + render", "%s; %d files, %d routes (%s of JSON)", luaFull.Round(time.Millisecond),
		len(luaArt.Files), len(luaArt.Routes), mib(int64(len(routesJSON))))
	begin = time.Now()
	harness.NginxTest(t, nginx, harness.Prefix(t, luaArt.Files))
	line("with lua routing: nginx -t", "%s", time.Since(begin).Round(time.Millisecond))
	luaArt, routesJSON = renderer.Artifacts{}, nil
	snap, art, backendsJSON = translator.Snapshot{}, renderer.Artifacts{}, nil
	runtime.GC()

	// 3. End to end with the real binary, NGINX and echo backends, once
	// per routing path (SWITCHYARD_SCALE_ROUTING), side by side.
	bin := harness.Binary(t)
	portA := harness.StartEcho(t, bin, "echo", "pod-a")
	portB := harness.StartEcho(t, bin, "echo", "pod-b")
	endToEnd := func(mode string) {
		failed := len(failures)
		how := "switchyard run"
		if mode == routingSplit {
			how = "switchyard stage per stage, on switchyard bus"
		}
		section(fmt.Sprintf("end to end (%s): %s, %d Ingresses in files of %d, one echo backend", mode, how, n, perFile))
		dir := t.TempDir()
		files := writeScaleManifests(t, dir, n, portA)
		harness.WriteFile(t, filepath.Join(dir, "echo.yaml"), harness.ServiceYAML(scaleNS, "echo", portA))
		harness.WriteFile(t, filepath.Join(dir, "change.yaml"), changeIngress(-1))
		files += 2
		if size, _, err := dirSize(dir); err == nil {
			line("manifests", "%s in %d files", mib(size), files)
		}

		sy := &harness.Switchyard{
			HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
			HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
			StateDir:  harness.StateDir(t),
			Manifests: dir,
		}
		// harness.StartSwitchyard's flags, started directly: it gives NGINX 30 s
		// to answer and fails the test, while 10,000 Ingresses may need longer.
		flags := []string{"--manifests", dir, "--http-addr", sy.HTTPAddr, "--https-addr", sy.HTTPSAddr,
			"--state-dir", sy.StateDir, "--worker-processes", fmt.Sprint(harness.Workers), "--shutdown-grace", "5s", "--log-level", "warn",
			"--lua-routing=" + fmt.Sprint(mode != routingBlocks)}
		var controller map[string]*harness.Process // the processes of the control plane, by name
		begin := time.Now()
		if mode == routingSplit {
			controller = startSplit(t, bin, flags)
			sy.Process = controller["stage applier"] // it runs NGINX
		} else {
			sy.Process = harness.Start(t, bin, append([]string{"run"}, flags...)...)
			controller = map[string]*harness.Process{"switchyard": sy.Process}
		}
		last := scaleHost(n - 1)
		startupWorkers := map[int]bool{}
		firstAnswer, firstStatus, served, lastSeen := startup(t, sy, last, startupWorkers)
		if !firstAnswer.IsZero() {
			line("start to NGINX answering (any status)", "%s (first answer for %s: status %d)",
				firstAnswer.Sub(begin).Round(10*time.Millisecond), last, firstStatus)
		} else {
			line("start to NGINX answering (any status)", "never within %s", startupTimeout)
		}
		if served.IsZero() {
			fail("%s not answered 200 within %s after start (polled every %s); last: %s", last, startupTimeout, startupPoll, lastSeen)
		} else {
			line(fmt.Sprintf("start to last host (%s) 200", last), "%s (polled every %s)", served.Sub(begin).Round(10*time.Millisecond), startupPoll)
		}
		line("NGINX worker PIDs seen during start-up", "%d (%d per generation: a reload starts a new one)", len(startupWorkers), harness.Workers)
		reportMemory := func(when string) {
			master, masterErr := readMasterPID(sy)
			var total int64
			for _, name := range slices.Sorted(maps.Keys(controller)) {
				pid := controller[name].Cmd.Process.Pid
				rss, peak, err := procStatus(pid)
				if err != nil {
					line(name+" RSS "+when, "unreadable: %v", err)
					continue
				}
				line(name+" RSS "+when, "%s (peak %s)", mib(rss), mib(peak))
				// Its other children are the annotation plugins.
				plugins, count := int64(0), 0
				for _, p := range harness.ChildPIDs(t, pid) {
					if prss, _, err := procStatus(p); err == nil && (masterErr != nil || p != master) {
						plugins += prss
						count++
					}
				}
				if count > 0 {
					line("  with its plugins "+when, "%s (%d plugin processes, %s)", mib(rss+plugins), count, mib(plugins))
				}
				total += rss + plugins
			}
			if len(controller) > 1 {
				line("control plane RSS "+when, "%s summed over its %d processes and their plugins", mib(total), len(controller))
			}
			if masterErr == nil {
				var sum int64
				var each []string
				for _, p := range append([]int{master}, harness.ChildPIDs(t, master)...) {
					if rss, _, err := procStatus(p); err == nil {
						sum += rss
						each = append(each, fmt.Sprintf("%.0f", float64(rss)/(1<<20)))
					}
				}
				line("NGINX RSS "+when, "%s summed (master, workers: %s MiB; shared pages count in each)", mib(sum), strings.Join(each, ", "))
			}
		}
		reportMemory("after start-up")
		confDir := sy.ConfDir()
		if size, count, err := dirSize(confDir); err == nil {
			line("<state>/nginx/conf on disk", "%s in %d files", mib(size), count)
		} else {
			line("<state>/nginx/conf on disk", "unreadable: %v", err)
		}

		if !served.IsZero() {
			if _, err := waitAnswer(sy.HTTPAddr, scaleHost(0), "/", "pod-a", changePoll, changeTimeout); err != nil {
				fail("first host: %v", err)
			}
			if _, err := waitAnswer(sy.HTTPAddr, changeHost, "/base", "", changePoll, changeTimeout); err != nil {
				fail("change host before the changes: %v", err)
			}
		}
		ingressChange := series{name: "one-Ingress change to its first 200"}
		if len(failures) == failed {
			for i := range changes {
				if !budget(&rep, t, ingressChange) {
					break
				}
				path := fmt.Sprintf("/v%d", i)
				begin := time.Now()
				harness.WriteFile(t, filepath.Join(dir, "change.yaml"), changeIngress(i))
				at, err := waitAnswer(sy.HTTPAddr, changeHost, path, "", changePoll, changeTimeout)
				if err != nil {
					fail("one-Ingress change %d: %v", i, err)
					break
				}
				ingressChange.samples = append(ingressChange.samples, at.Sub(begin))
			}
			if len(ingressChange.samples) > 0 {
				fmt.Fprintf(&rep, "%s  (%s)\n", ingressChange, map[string]string{routingLua: "a route change, no reload expected",
					routingSplit: "a route change, no reload expected", routingBlocks: "includes NGINX reload"}[mode])
			}

			workers := harness.ChildPIDs(t, mustMasterPID(t, sy))
			endpointChange, err := endpointChanges(&rep, t, sy, dir, portA, portB)
			if err != nil {
				fail("%v", err)
			}
			if len(endpointChange.samples) > 0 {
				fmt.Fprintf(&rep, "%s  (no reload expected)\n", endpointChange)
				newWorkers := slices.DeleteFunc(harness.ChildPIDs(t, mustMasterPID(t, sy)), func(p int) bool { return slices.Contains(workers, p) })
				line("NGINX reloaded during endpoint changes", "%v", len(newWorkers) > 0)
			}
			if testing.Verbose() {
				fmt.Fprintf(&rep, "one-Ingress change samples: %v\none-endpoint change samples: %v\n",
					round(ingressChange.samples), round(endpointChange.samples))
			}
			reportMemory("at the end")
			// The steady state: the controller returns its memory once
			// nothing was applied for a while (memory.go:
			// quietBeforeRelease, 15 s).
			time.Sleep(settleTime)
			reportMemory(fmt.Sprintf("%s after the last change", settleTime))
		}

		section("design targets (reported, not asserted)")
		line("full render <= 1s", "translate + render median %s: %s", full.quantile(0.5).Round(time.Millisecond), met(full.quantile(0.5) <= time.Second))
		if len(ingressChange.samples) > 0 {
			line("one-Ingress change via translate+render <= 50ms", "measured end to end ("+mode+"): median %s, p99 %s",
				ingressChange.quantile(0.5).Round(time.Millisecond), ingressChange.quantile(0.99).Round(time.Millisecond))
		}
		line("ingress-nginx reference", "~90 s per sync at 3,000 Ingresses, ~200 MB nginx.conf")
		line("  here", "%s rendered for %d Ingresses; start to last host %s", mib(renderedBytes), n, durationOr(served, begin, "not served"))

		summarizeOutput(&rep, sy.Output.String())
		sy.Stop(10 * time.Second)
		for name, p := range controller {
			if name != "bus" {
				p.Stop(10 * time.Second)
			}
		}
		if bus := controller["bus"]; bus != nil {
			bus.Stop(10 * time.Second)
		}
	}
	for _, mode := range scaleRoutings(t) {
		endToEnd(mode)
	}
}

// summarizeOutput reports switchyard's output as distinct messages with
// counts: digits (times, pids, connection numbers, host numbers) and what
// follows ", client:" are masked, so repeats of one warning count once.
func summarizeOutput(rep *strings.Builder, output string) {
	output = strings.TrimSpace(output)
	name := "switchyard output (--log-level warn)"
	if output == "" {
		fmt.Fprintf(rep, "%-42s empty\n", name)
		return
	}
	lines := strings.Split(output, "\n")
	digits := regexp.MustCompile(`[0-9]+`)
	counts := map[string]int{}
	var order []string
	for _, l := range lines {
		l, _, _ = strings.Cut(l, ", client:")
		key := digits.ReplaceAllString(l, "N")
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return counts[b] - counts[a] })
	fmt.Fprintf(rep, "%-42s %d lines, %d distinct (digits masked):\n", name, len(lines), len(order))
	for _, key := range order[:min(len(order), 8)] {
		shown := key
		if len(shown) > 240 {
			shown = shown[:240] + "…"
		}
		fmt.Fprintf(rep, "    %6dx %s\n", counts[key], shown)
	}
}

// budget says whether another sample of s fits before the test's deadline
// (go test -timeout) with a minute to spare for the report and clean-up; if
// not, it says so in the report, since a timed-out test prints nothing.
func budget(rep *strings.Builder, t *testing.T, s series) bool {
	deadline, ok := t.Deadline()
	if !ok || len(s.samples) == 0 {
		return true
	}
	if time.Until(deadline) > 2*s.quantile(1)+time.Minute {
		return true
	}
	fmt.Fprintf(rep, "%-42s stopped after %d samples: the go test -timeout is near\n", s.name, len(s.samples))
	return false
}

// startup polls the last host until it answers 200, switchyard exits or
// startupTimeout passes, and returns when NGINX first answered at all and
// with what status, and when the host was served (zero if never), with the
// last thing seen. It collects the NGINX worker PIDs it sees in workers.
func startup(t *testing.T, sy *harness.Switchyard, host string, workers map[int]bool) (firstAnswer time.Time, firstStatus int, served time.Time, last string) {
	client := harness.NewClient()
	deadline := time.Now().Add(startupTimeout)
	for time.Now().Before(deadline) {
		if sy.Exited() {
			return firstAnswer, firstStatus, time.Time{}, "switchyard exited"
		}
		r, err := harness.Do(client, "GET", "http://"+sy.HTTPAddr+"/", host, nil)
		if master, err := readMasterPID(sy); err == nil {
			for _, w := range harness.ChildPIDs(t, master) {
				workers[w] = true
			}
		}
		switch {
		case err != nil:
			last = err.Error()
		default:
			if firstAnswer.IsZero() {
				firstAnswer, firstStatus = time.Now(), r.Status
			}
			if r.Status == 200 {
				return firstAnswer, firstStatus, time.Now(), ""
			}
			last = fmt.Sprintf("status %d", r.Status)
		}
		time.Sleep(startupPoll)
	}
	return firstAnswer, firstStatus, time.Time{}, last
}

func readMasterPID(sy *harness.Switchyard) (pid int, err error) {
	data, err := os.ReadFile(filepath.Join(sy.Prefix(), "nginx.pid"))
	if err != nil {
		return 0, err
	}
	_, err = fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &pid)
	return pid, err
}

func mustMasterPID(t *testing.T, sy *harness.Switchyard) int {
	t.Helper()
	pid, err := readMasterPID(sy)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func durationOr(at, begin time.Time, otherwise string) string {
	if at.IsZero() {
		return otherwise
	}
	return at.Sub(begin).Round(10 * time.Millisecond).String()
}

// The ways TestBenchScale runs end to end.
const (
	routingLua    = "lua routing"
	routingBlocks = "server blocks"
	// routingSplit is Lua routing in split mode: each stage its own
	// process (switchyard stage NAME), on a one-node bus of its own
	// (switchyard bus), as one stage per Deployment runs.
	routingSplit = "split mode, lua routing"
)

// scaleRoutings reads SWITCHYARD_SCALE_ROUTING: "lua", "blocks", "split",
// "both" (lua and blocks) or "all" (the default: every one, one after the
// other in one run).
func scaleRoutings(t *testing.T) []string {
	switch v := os.Getenv("SWITCHYARD_SCALE_ROUTING"); v {
	case "", "all":
		return []string{routingLua, routingBlocks, routingSplit}
	case "both":
		return []string{routingLua, routingBlocks}
	case "lua":
		return []string{routingLua}
	case "blocks":
		return []string{routingBlocks}
	case "split":
		return []string{routingSplit}
	default:
		t.Fatalf("SWITCHYARD_SCALE_ROUTING=%q: want lua, blocks, split, both or all", v)
		return nil
	}
}

// splitStages are the stages of split mode, started in this order: each
// catches up from the bus whenever it starts, so the order only decides
// what waits for what.
var splitStages = []string{"applier", "renderer", "annotations", "translator", "watcher"}

// startSplit runs a one-node bus (switchyard bus) and the stages on it,
// each a process with flags, and returns them by name ("bus" the node).
func startSplit(t *testing.T, bin string, flags []string) map[string]*harness.Process {
	t.Helper()
	bus := harness.StartBusCluster(t, 1)
	procs := map[string]*harness.Process{"bus": bus.Nodes[0].Process}
	busFlags := []string{"--nats", bus.ClientURLs(), "--nats-keys", bus.Keys}
	for _, stage := range splitStages {
		procs["stage "+stage] = harness.Start(t, bin, slices.Concat([]string{"stage", stage}, busFlags, flags)...)
	}
	return procs
}
