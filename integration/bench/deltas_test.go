package bench

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchEndpointDeltas reports, at SWITCHYARD_SCALE_N Ingresses (10,000
// by default; each with its own host, Service and EndpointSlice), a
// one-endpoint change to traffic on it and the bytes posted to the Lua
// endpoint per change, once with every backend posted on each change
// (--full-backend-posts, as before deltas) and once with only the changed
// backend posted (a delta), each on its own fresh switchyard, same run.
// Timings are reported, never asserted; it fails only when a change is
// never served.
func TestBenchEndpointDeltas(t *testing.T) {
	requireBench(t)
	harness.Nginx(t)
	n := scaleN(t)
	bin := harness.Binary(t)
	portA := harness.StartEcho(t, bin, "echo", "pod-a")
	portB := harness.StartEcho(t, bin, "echo", "pod-b")

	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nendpoint deltas: %d Ingresses, each with its own host, Service and EndpointSlice; %d one-endpoint changes per mode\n",
		strings.Repeat("=", 100), n, changes)
	defer func() { t.Log(rep.String()) }()
	modes := []struct {
		name  string
		flags []string
	}{
		{"full posts (--full-backend-posts)", []string{"--full-backend-posts"}},
		{"deltas", nil},
	}
	for _, mode := range modes {
		fmt.Fprintf(&rep, "-- %s\n", mode.name)
		if err := endpointChangesAtScale(t, &rep, bin, n, portA, portB, mode.flags); err != nil {
			fmt.Fprintf(&rep, "FAILED: %v\n", err)
			t.Errorf("%s: %v", mode.name, err)
		}
	}
}

// endpointChangesAtScale starts switchyard with n Ingresses, changes
// Ingress 0's endpoint back and forth and reports what it took.
func endpointChangesAtScale(t *testing.T, rep *strings.Builder, bin string, n, portA, portB int, flags []string) error {
	dir := t.TempDir()
	writeScaleManifests(t, dir, n, portA)
	sy := &harness.Switchyard{
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		StateDir:  harness.StateDir(t),
		Manifests: dir,
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	profiling := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	args := append([]string{"run", "--manifests", dir, "--http-addr", sy.HTTPAddr, "--https-addr", sy.HTTPSAddr,
		"--state-dir", sy.StateDir, "--worker-processes", fmt.Sprint(harness.Workers), "--shutdown-grace", "5s",
		"--log-level", "warn", "--metrics-addr", metricsAddr, "--enable-metrics=false", "--profiling-addr", profiling}, flags...)
	begin := time.Now()
	sy.Process = harness.Start(t, bin, args...)
	// The next mode starts on an idle machine.
	defer sy.Stop(20 * time.Second)
	last := scaleHost(n - 1)
	_, _, served, lastSeen := startup(t, sy, last, map[int]bool{})
	if served.IsZero() {
		return fmt.Errorf("%s not served within %s: %s", last, startupTimeout, lastSeen)
	}
	fmt.Fprintf(rep, "%-42s %s\n", "start to last host 200", served.Sub(begin).Round(10*time.Millisecond))
	if _, err := waitAnswer(sy.HTTPAddr, scaleHost(0), "/", "pod-a", changePoll, changeTimeout); err != nil {
		return fmt.Errorf("first host: %w", err)
	}
	before, err := backendPosts(metricsAddr)
	if err != nil {
		return err
	}
	workers := harness.ChildPIDs(t, mustMasterPID(t, sy))
	heapProfile := func(when string) string {
		dir := os.Getenv(profileDirEnv)
		if dir == "" {
			return ""
		}
		path := filepath.Join(dir, fmt.Sprintf("switchyard-heap-%s-endpoint-changes-%d%s.pb.gz", when, n, strings.Join(flags, "")))
		if err := saveProfile(profiling, "heap", path); err != nil {
			return ""
		}
		return path
	}
	heapBefore := heapProfile("before")
	profiled := profileCPU(rep, profiling, fmt.Sprintf("switchyard-cpu-endpoint-changes-%d%s.pb.gz", n, strings.Join(flags, "")))
	pid := sy.Process.Cmd.Process.Pid
	cpuBefore := processCPU(pid)
	change, err := endpointChanges(rep, t, sy, dir, portA, portB)
	cpuSpent := processCPU(pid) - cpuBefore
	profiled()
	if err != nil {
		return err
	}
	// The apply result that feeds the metrics is published after the
	// post; give the last one a moment to arrive.
	var after map[string]float64
	deadline := time.Now().Add(10 * time.Second)
	for {
		if after, err = backendPosts(metricsAddr); err != nil {
			return err
		}
		if posts(after)-posts(before) >= float64(len(change.samples)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintln(rep, change)
	// CPU time depends far less on the machine's other load than the
	// latency does: the figure to compare across runs.
	fmt.Fprintf(rep, "%-42s %s per change (%s over %d changes)\n", "switchyard CPU during the changes",
		(cpuSpent / time.Duration(max(len(change.samples), 1))).Round(time.Millisecond), cpuSpent, len(change.samples))
	if rss, peak, err := procStatus(pid); err == nil {
		fmt.Fprintf(rep, "%-42s %s (peak %s; %s)\n", "switchyard RSS after the changes", mib(rss), mib(peak), rssSplit(pid))
	}
	fmt.Fprintf(rep, "%-42s %s\n", "plugin processes PSS", pluginsPSS(t, pid))
	if stats, err := goMemStats(profiling); err == nil {
		fmt.Fprintf(rep, "%-42s live %s, in use %s, idle %s (released %s), runtime Sys %s\n", "Go heap after a forced GC",
			mib(stats["HeapAlloc"]), mib(stats["HeapInuse"]), mib(stats["HeapIdle"]), mib(stats["HeapReleased"]), mib(stats["Sys"]))
	}
	if heapAfter := heapProfile("after"); heapAfter != "" && heapBefore != "" {
		// What the changes allocated: go tool pprof -sample_index=alloc_space -diff_base before after.
		fmt.Fprintf(rep, "%-42s %s, %s\n", "heap profiles before and after", heapBefore, heapAfter)
	}
	stageShares(rep, before, after)
	for _, mode := range []string{"full", "delta"} {
		count := after["posts "+mode] - before["posts "+mode]
		if count == 0 {
			continue
		}
		bytes := after["bytes "+mode] - before["bytes "+mode]
		fmt.Fprintf(rep, "%-42s %.0f posts, %.0f bytes per post, %.0f bytes per change\n", mode+" posts during the changes", count,
			bytes/count, bytes/float64(len(change.samples)))
	}
	newWorkers := slices.DeleteFunc(harness.ChildPIDs(t, mustMasterPID(t, sy)), func(p int) bool { return slices.Contains(workers, p) })
	fmt.Fprintf(rep, "%-42s %v\n", "NGINX reloaded during endpoint changes", len(newWorkers) > 0)
	if testing.Verbose() {
		fmt.Fprintf(rep, "samples: %v\n", round(change.samples))
	}
	return nil
}

// cpuProfileSeconds covers the endpoint changes of TestBenchEndpointDeltas
// on a loaded machine; a profile that outlasts them only adds idle time.
const cpuProfileSeconds = 15

// profileCPU starts a CPU profile of switchyard at profiling when
// SWITCHYARD_BENCH_PROFILE_DIR is set, saved there as file; the returned
// func waits for it and reports where it is.
func profileCPU(rep *strings.Builder, profiling, file string) func() {
	dir := os.Getenv(profileDirEnv)
	if dir == "" {
		return func() {}
	}
	path := filepath.Join(dir, file)
	done := make(chan error, 1)
	go func() { done <- saveProfile(profiling, fmt.Sprintf("profile?seconds=%d", cpuProfileSeconds), path) }()
	return func() {
		if err := <-done; err != nil {
			fmt.Fprintf(rep, "%-42s not saved: %v\n", "CPU profile", err)
			return
		}
		fmt.Fprintf(rep, "%-42s %s (first %ds of the changes)\n", "CPU profile", path, cpuProfileSeconds)
	}
}

func posts(m map[string]float64) float64 { return m["posts full"] + m["posts delta"] }

var stageLabel = regexp.MustCompile(`stage="([a-z]+)"`)

// addStageLatency records a line of switchyard_stage_latency_seconds' sum
// or count as "latency sum <stage>" or "latency count <stage>".
func addStageLatency(out map[string]float64, line string) error {
	m := stageLabel.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("metrics line %q: no stage", line)
	}
	v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
	if err != nil {
		return fmt.Errorf("metrics line %q: %w", line, err)
	}
	kind := "latency count "
	if strings.HasPrefix(line, "switchyard_stage_latency_seconds_sum{") {
		kind = "latency sum "
	}
	out[kind+m[1]] = v
	return nil
}

// stageShares reports, per stage in pipeline order, the mean time from a
// change entering the watcher to the stage having published it, over the
// generations between two scrapes: where an endpoint change spends its
// time.
func stageShares(rep *strings.Builder, before, after map[string]float64) {
	var parts []string
	for _, stage := range []string{"watcher", "translator", "annotations", "renderer", "applier"} {
		n := after["latency count "+stage] - before["latency count "+stage]
		if n <= 0 {
			continue
		}
		mean := time.Duration((after["latency sum "+stage] - before["latency sum "+stage]) / n * float64(time.Second))
		parts = append(parts, fmt.Sprintf("%s %s (%.0f)", stage, mean.Round(100*time.Microsecond), n))
	}
	fmt.Fprintf(rep, "%-42s %s\n", "mean time from ingest to each stage done", strings.Join(parts, ", "))
}

// backendPosts scrapes switchyard_backends_posts_total and
// switchyard_backends_posted_bytes_total as "posts <mode>" and
// "bytes <mode>".
func backendPosts(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		var kind string
		switch {
		case strings.HasPrefix(line, "switchyard_backends_posts_total{"):
			kind = "posts"
		case strings.HasPrefix(line, "switchyard_backends_posted_bytes_total{"):
			kind = "bytes"
		case strings.HasPrefix(line, "switchyard_stage_latency_seconds_sum{"), strings.HasPrefix(line, "switchyard_stage_latency_seconds_count{"):
			if err := addStageLatency(out, line); err != nil {
				return nil, err
			}
			continue
		default:
			continue
		}
		for _, mode := range []string{"full", "delta"} {
			if strings.Contains(line, `mode="`+mode+`"`) {
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				if err != nil {
					return nil, fmt.Errorf("metrics line %q: %w", line, err)
				}
				out[kind+" "+mode] = v
			}
		}
	}
	return out, scanner.Err()
}
