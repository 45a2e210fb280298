package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchOverheadRouting compares, in one run, throughput through a
// Lua-routed host (--lua-routing, the default: no server block, the
// catch-all's router.lua picks the location) with the same host on plain
// NGINX (its server block, Lua taken out: plainConfig). Two Switchyards
// serve it, one with the host alone and one among SWITCHYARD_SCALE_N
// Lua-routed hosts (10,000 by default), loaded in turn with the plain NGINX
// in the same rounds: routing must not cost more per request with more
// hosts, and a drift of the machine between two runs cannot look like it.
func TestBenchOverheadRouting(t *testing.T) {
	requireBench(t)
	nginx, f, blocks := startOverheadFixture(t)
	plain := startScratch(t, nginx, blocks, "plain", plainConfig(f.portA, f.portB))
	waitScratch(t, plain, f.host)
	blocks.Stop(10 * time.Second)

	const rounds, per = 3, 5 * time.Second
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nrouting overhead: %d keep-alive clients, %d alternating rounds of %s each\n", strings.Repeat("=", 100),
		overheadClients, rounds, per)
	var targets []benchTarget
	var controllers []int
	for _, hosts := range []int{1, scaleN(t)} {
		lua, ready := startLuaRouted(t, f, hosts)
		fmt.Fprintf(&rep, "%d hosts: all served %s after start\n", hosts, ready.Round(100*time.Millisecond))
		targets = append(targets, benchTarget{name: fmt.Sprintf("lua-routed, %d hosts", hosts), addr: lua.HTTPAddr, master: lua.MasterPID(t)})
		controllers = append(controllers, lua.Process.Cmd.Process.Pid)
	}
	targets = append(targets, benchTarget{name: "plain NGINX, server block", addr: plain.httpAddr, master: plain.master})
	// What is measured is NGINX routing requests, not a controller's
	// start-up tail (the collection and page release after its first quiet
	// period) sharing the machine's two cores with it: the rounds start
	// once that is over.
	time.Sleep(settleTime)
	var controllerCPU []time.Duration
	for _, pid := range controllers {
		controllerCPU = append(controllerCPU, processCPU(pid))
	}
	runs := alternate(targets, f.host, rounds, per)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-36s %s\n", targets[i].name, r)
	}
	for i, pid := range controllers {
		fmt.Fprintf(&rep, "%s: its controller used %s of CPU during the rounds\n", targets[i].name,
			(processCPU(pid) - controllerCPU[i]).Round(10*time.Millisecond))
	}
	plainRun := runs[len(runs)-1]
	for i, r := range runs[:len(runs)-1] {
		throughput := r.rps() / plainRun.rps()
		fmt.Fprintf(&rep, "%s: throughput ratio lua-routed / plain %.2f (target >= 0.9: %s; by round: %s); p99 ratio %.2f; NGINX CPU per request plain / lua-routed %.2f\n",
			targets[i].name, throughput, met(throughput >= 0.9), roundRatios(r, plainRun), ratio(r.quantile(0.99), plainRun.quantile(0.99)),
			ratio(plainRun.cpuPerRequest(), r.cpuPerRequest()))
	}
	one, many := runs[0], runs[1]
	fmt.Fprintf(&rep, "%s against 1 host: throughput %.2f (by round: %s); NGINX CPU per request %.2f\n", targets[1].name,
		many.rps()/one.rps(), roundRatios(many, one), ratio(many.cpuPerRequest(), one.cpuPerRequest()))
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
}

// startLuaRouted runs a Lua-routed Switchyard serving f's host among
// hosts in all (the others from writeScaleManifests), and returns it once
// its first and last hosts answer, with the time that took.
func startLuaRouted(t *testing.T, f *fixture, hosts int) (*harness.Switchyard, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"class.yaml", "service.yaml", "ingress.yaml"} {
		data, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		harness.WriteFile(t, filepath.Join(dir, name), string(data))
	}
	if hosts > 1 {
		writeScaleManifests(t, dir, hosts-1, f.portA)
	}
	begin := time.Now()
	lua := startScaled(t, dir, "--lua-routing=true", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)))
	for _, host := range []string{f.host, scaleHost(hosts - 2)} {
		if host == scaleHost(-1) {
			continue // the host alone
		}
		if _, err := waitAnswer(lua.HTTPAddr, host, "/", "", startupPoll, startupTimeout); err != nil {
			t.Fatalf("lua-routed %s: %v", host, err)
		}
	}
	ready := time.Since(begin)
	if _, err := os.Stat(filepath.Join(lua.ConfDir(), "servers", "bench_2eexample_2ecom.conf")); err == nil {
		t.Fatalf("%s has a server block with --lua-routing", f.host)
	}
	return lua, ready
}

// startScaled runs switchyard on dir like harness.StartSwitchyard, but
// without its 30 s limit for NGINX to answer: thousands of hosts may need
// longer.
func startScaled(t *testing.T, dir string, extra ...string) *harness.Switchyard {
	t.Helper()
	sy := &harness.Switchyard{
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		StateDir:  harness.StateDir(t),
		Manifests: dir,
	}
	args := append([]string{"run", "--manifests", dir, "--http-addr", sy.HTTPAddr, "--https-addr", sy.HTTPSAddr,
		"--state-dir", sy.StateDir, "--worker-processes", fmt.Sprint(harness.Workers), "--shutdown-grace", "5s", "--log-level", "warn"}, extra...)
	sy.Process = harness.Start(t, harness.Binary(t), args...)
	return sy
}
