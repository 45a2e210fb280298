package bench

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchOverhead compares, in one run, throughput and p99 latency through
// Switchyard's NGINX (Lua balancer) with a plain NGINX, loaded alternately by
// the same closed-loop client. The plain NGINX runs Switchyard's own rendered
// configuration with only the Lua taken out (see plainConfig): the same
// maps, proxy headers, access log format, timeouts, workers and upstream
// keep-alive, and a static upstream of the same two echo backends, so the
// two cannot drift apart and the ratio is the cost of the Lua alone.
func TestBenchOverhead(t *testing.T) {
	requireBench(t)
	nginx, f, sy := startOverheadFixture(t)
	plain := startScratch(t, nginx, sy, "plain", plainConfig(f.portA, f.portB))
	waitScratch(t, plain, f.host)

	targets := []benchTarget{{name: "switchyard (Lua balancer)", addr: sy.HTTPAddr, master: sy.MasterPID(t)},
		{name: "plain NGINX (static upstream)", addr: plain.httpAddr, master: plain.master}}
	runs := alternate(targets, f.host, 3, 5*time.Second)
	syAll, plainAll := runs[0], runs[1]
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\noverhead: %d keep-alive clients, %d alternating rounds of %s each\n", strings.Repeat("=", 100),
		overheadClients, 3, 5*time.Second)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-36s %s\n", targets[i].name, r)
	}
	throughput := syAll.rps() / plainAll.rps()
	fmt.Fprintf(&rep, "throughput ratio switchyard / plain: %.2f (target >= 0.95: %s; by round: %s); p99 ratio: %.2f; NGINX CPU per request plain / switchyard: %.2f\n",
		throughput, met(throughput >= 0.95), roundRatios(syAll, plainAll), ratio(syAll.quantile(0.99), plainAll.quantile(0.99)),
		ratio(plainAll.cpuPerRequest(), syAll.cpuPerRequest()))
	t.Log(rep.String())
	if syAll.failed > 0 {
		t.Errorf("%d requests failed through switchyard", syAll.failed)
	}
	if plainAll.failed > 0 {
		t.Errorf("%d requests failed through plain NGINX", plainAll.failed)
	}
}

// TestBenchOverheadHooks attributes the gap between Switchyard and plain
// NGINX to the Lua hooks: besides both, it runs scratch copies of
// Switchyard's rendered configuration (with the same backends posted to
// their own Lua endpoint), each with one hook taken out. The scratch
// configurations are measurement only: a copy without a hook loses the
// behaviour that hook carries (redirects, HSTS, EWMA, sticky cookies).
func TestBenchOverheadHooks(t *testing.T) {
	requireBench(t)
	nginx, f, sy := startOverheadFixture(t)

	variants := []struct {
		name string
		edit luaEdit
	}{
		{"copy of switchyard (all hooks)", keepLua},
		{"without log_by_lua", dropBlocks("log_by_lua_block")},
		{"without header_filter_by_lua", dropBlocks("header_filter_by_lua_block")},
		{"without ingress.rewrite", dropLines("rewrite_by_lua_block", `require("switchyard.ingress").rewrite(`)},
		{"log hook without metrics.log", dropLines("log_by_lua_block", `require("switchyard.metrics").log()`)},
		{"without rewrite_by_lua", dropBlocks("rewrite_by_lua_block")},
		{"balancer_by_lua only", dropBlocks("rewrite_by_lua_block", "header_filter_by_lua_block", "log_by_lua_block")},
	}
	targets := []benchTarget{{name: "switchyard", addr: sy.HTTPAddr, master: sy.MasterPID(t)}}
	for _, v := range variants {
		s := startScratch(t, nginx, sy, "lua", v.edit)
		s.copyDynamic(t, sy)
		waitScratch(t, s, f.host)
		targets = append(targets, benchTarget{name: v.name, addr: s.httpAddr, master: s.master})
	}
	plain := startScratch(t, nginx, sy, "plain", plainConfig(f.portA, f.portB))
	waitScratch(t, plain, f.host)
	targets = append(targets, benchTarget{name: "plain NGINX (static upstream)", addr: plain.httpAddr, master: plain.master})

	const rounds = 3
	per := 4 * time.Second
	runs := alternate(targets, f.host, rounds, per)
	full, plainRun := runs[1], runs[len(runs)-1]
	gap := float64(full.cpuPerRequest() - plainRun.cpuPerRequest())
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\noverhead by hook: %d keep-alive clients, %d alternating rounds of %s each\n", strings.Repeat("=", 100),
		overheadClients, rounds, per)
	for i, r := range runs {
		share := ""
		if i >= 2 && i < len(runs)-1 && gap > 0 {
			share = fmt.Sprintf("  (saves %.0f%% of the CPU gap to plain)", 100*float64(full.cpuPerRequest()-r.cpuPerRequest())/gap)
		}
		fmt.Fprintf(&rep, "%-36s %s; ratio to plain %.2f%s\n", targets[i].name, r, r.rps()/plainRun.rps(), share)
	}
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
}

// TestPlainConfig checks the benchmark's baseline itself (it runs without
// SWITCHYARD_BENCH): the configuration derived from Switchyard's rendered
// one has no Lua left, passes nginx -t, keeps the access log format and
// upstream headers, and serves the Ingress from both static endpoints.
func TestPlainConfig(t *testing.T) {
	nginx, f, sy := startOverheadFixture(t)
	plain := startScratch(t, nginx, sy, "plain", plainConfig(f.portA, f.portB))
	waitScratch(t, plain, f.host)

	err := filepath.WalkDir(filepath.Join(plain.prefix, "conf"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if regexp.MustCompile(`(?m)^[^#]*lua`).Match(data) {
			t.Errorf("%s still mentions Lua:\n%s", path, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(plain.prefix, "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"log_format upstreaminfo", "proxy_set_header X-Request-ID $req_id",
		fmt.Sprintf("server 127.0.0.1:%d;", f.portA), fmt.Sprintf("server 127.0.0.1:%d;", f.portB)} {
		if !bytes.Contains(conf, []byte(want)) {
			t.Errorf("plain nginx.conf lacks %q", want)
		}
	}
	pods := map[string]bool{}
	client := harness.NewClient()
	for i := 0; i < 20 && len(pods) < 2; i++ {
		r, err := harness.Do(client, http.MethodGet, "http://"+plain.httpAddr+"/", f.host, nil)
		if err != nil || r.Status != 200 || r.Echo == nil {
			t.Fatalf("plain NGINX: %+v, %v", r, err)
		}
		if r.Echo.Headers["X-Request-Id"] == nil {
			t.Errorf("plain NGINX sent no X-Request-ID upstream: %v", r.Echo.Headers)
		}
		pods[r.Echo.Pod] = true
	}
	if len(pods) != 2 {
		t.Errorf("plain NGINX reached pods %v, want both", pods)
	}
}

const overheadClients = 16

// benchTarget is one NGINX under load; master is its master process, whose
// workers' CPU time is measured. host, when set, replaces the host every
// target of a run is loaded with, and origin is sent as the Origin header.
type benchTarget struct {
	name, addr string
	master     int
	host       string
	origin     string
}

// expectNoFailures fails the test for each target a request failed
// through: a ratio over failed requests measures nothing.
func expectNoFailures(t *testing.T, targets []benchTarget, runs []closedLoop) {
	t.Helper()
	for i, r := range runs {
		if r.failed > 0 {
			t.Errorf("%d requests failed through %s", r.failed, targets[i].name)
		}
	}
}

// alternate loads each target in turn, rounds times, so that a change of
// the machine's load during the run hits every target alike.
func alternate(targets []benchTarget, host string, rounds int, per time.Duration) []closedLoop {
	runs := make([][]closedLoop, len(targets))
	for range rounds {
		for i, target := range targets {
			before := workersCPU(target.master)
			h := host
			if target.host != "" {
				h = target.host
			}
			run := runClosedLoop(target.addr, h, target.origin, overheadClients, per)
			run.cpu = workersCPU(target.master) - before
			runs[i] = append(runs[i], run)
		}
	}
	merged := make([]closedLoop, len(targets))
	for i := range runs {
		merged[i] = mergeLoops(runs[i])
	}
	return merged
}

// closedLoop is one closed-loop load run: each client sends its next
// request as soon as the last one is answered.
type closedLoop struct {
	series
	elapsed time.Duration
	failed  int
	cpu     time.Duration // CPU time of the NGINX workers during the run
	// roundRPS is each round's throughput, in order, when the run merges
	// the rounds of alternate().
	roundRPS []float64
}

// cpuPerRequest is the NGINX workers' CPU time per answered request. On a
// shared machine it is steadier than throughput: other processes' load
// slows the run down, but hardly changes what one request costs NGINX.
func (c closedLoop) cpuPerRequest() time.Duration {
	if len(c.samples) == 0 {
		return 0
	}
	return c.cpu / time.Duration(len(c.samples))
}

// workersCPU sums user and system CPU time of master's child processes
// (the NGINX workers), from /proc.
func workersCPU(master int) time.Duration {
	entries, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range entries {
		ppid, cpu, ok := procStat(filepath.Join("/proc", e.Name(), "stat"))
		if ok && ppid == master {
			total += cpu
		}
	}
	return total
}

// processCPU is the user and system CPU time of process pid (its threads
// included).
func processCPU(pid int) time.Duration {
	_, cpu, _ := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return cpu
}

// procStat reads a process's parent and CPU time from its /proc stat file.
func procStat(path string) (ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces: fields count from after ")".
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	// USER_HZ is 100 on Linux.
	return ppid, time.Duration(utime+stime) * 10 * time.Millisecond, true
}

func (c closedLoop) rps() float64 { return float64(len(c.samples)) / c.elapsed.Seconds() }

func (c closedLoop) String() string {
	return fmt.Sprintf("%.0f requests/s, failed=%d, median=%s p99=%s, NGINX CPU %.1fµs/request", c.rps(), c.failed,
		c.quantile(0.5).Round(10*time.Microsecond), c.quantile(0.99).Round(10*time.Microsecond),
		float64(c.cpuPerRequest().Nanoseconds())/1e3)
}

func runClosedLoop(addr, host, origin string, clients int, d time.Duration) closedLoop {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := closedLoop{series: series{name: addr}}
	begin := time.Now()
	deadline := begin.Add(d)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			failed := 0
			for time.Now().Before(deadline) {
				start := time.Now()
				if err := getWithOrigin(client, addr, host, origin); err != nil {
					failed++
					continue
				}
				local = append(local, time.Since(start))
			}
			mu.Lock()
			out.samples = append(out.samples, local...)
			out.failed += failed
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(begin)
	return out
}

func mergeLoops(runs []closedLoop) closedLoop {
	var all closedLoop
	for _, r := range runs {
		all.samples = append(all.samples, r.samples...)
		all.elapsed += r.elapsed
		all.failed += r.failed
		all.cpu += r.cpu
		all.roundRPS = append(all.roundRPS, r.rps())
	}
	return all
}

// roundRatios are a's throughput over b's round by round, e.g.
// "0.93 0.97 0.91": how far one round's ratio strays from the merged one
// is what a single ratio cannot show on a shared machine.
func roundRatios(a, b closedLoop) string {
	var out []string
	for i := range min(len(a.roundRPS), len(b.roundRPS)) {
		out = append(out, fmt.Sprintf("%.2f", a.roundRPS[i]/b.roundRPS[i]))
	}
	return strings.Join(out, " ")
}

// scratch is an NGINX started from a copy of Switchyard's prefix with an
// edited configuration.
type scratch struct {
	prefix, httpAddr, socket string
	master                   int
}

// luaEdit rewrites one `*_by_lua_block { ... }` directive of the rendered
// configuration: it returns the text that replaces the whole block (the
// block itself to keep it, "" to drop it).
type luaEdit func(directive, block string) string

func keepLua(_, block string) string { return block }

func dropBlocks(directives ...string) luaEdit {
	return func(directive, block string) string {
		for _, d := range directives {
			if d == directive && !strings.Contains(block, "ngx.exit(404)") {
				return ""
			}
		}
		return block
	}
}

// dropLines keeps directive's blocks but removes their lines that
// contain call: e.g. the ssl-redirect/HSTS check before the balancer's
// rewrite hook, or the metrics in the log hook (the hook itself stays,
// so the difference is that call's own cost).
func dropLines(directive, call string) luaEdit {
	return func(d, block string) string {
		if d != directive {
			return block
		}
		var kept []string
		for _, line := range strings.SplitAfter(block, "\n") {
			if !strings.Contains(line, call) {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "")
	}
}

// plainConfig is the edit that turns Switchyard's configuration into a
// plain NGINX one: every Lua block goes (the default server's 404 and the
// configuration endpoint become a plain return), and the rest of the Lua
// setup is removed by plainLines.
func plainConfig(ports ...int) luaEdit {
	return func(directive, block string) string {
		indent := block[:len(block)-len(strings.TrimLeft(block, " \t"))]
		switch {
		case directive == "content_by_lua_block":
			return indent + "return 404;\n"
		case directive == "rewrite_by_lua_block" && strings.Contains(block, "ngx.exit(404)"):
			return indent + "return 404;\n"
		case directive == "header_filter_by_lua_block" && strings.Contains(block, corsFilterCall):
			return handWrittenCORS(indent, block)
		case directive == "balancer_by_lua_block":
			// The static upstream replaces the Lua balancer.
			var servers strings.Builder
			for _, p := range ports {
				fmt.Fprintf(&servers, "%sserver 127.0.0.1:%d;\n", indent, p)
			}
			return servers.String()
		}
		return ""
	}
}

// corsFilterCall is how a location with enable-cors calls its header filter.
const corsFilterCall = `require("switchyard.cors").header_filter(`

var corsFilterArgs = regexp.MustCompile(`header_filter\("[^"]*", ("[^"]*"), ("[^"]*"), "[^"]*", (true|false), (\d+)\)`)

// handWrittenCORS is what an NGINX user writes by hand for a location's
// CORS headers (without checking the origin against the list, which a
// plain configuration would do with a map): the plain copy then does the
// header work Switchyard's cors.lua does, so the ratio compares like with
// like.
func handWrittenCORS(indent, block string) string {
	m := corsFilterArgs.FindStringSubmatch(block)
	if m == nil {
		panic("cannot read the CORS header filter's arguments: " + block)
	}
	lines := []string{"Access-Control-Allow-Origin $http_origin", "Vary Origin",
		"Access-Control-Allow-Methods " + m[1], "Access-Control-Allow-Headers " + m[2], "Access-Control-Max-Age " + m[4]}
	if m[3] == "true" {
		lines = append(lines, "Access-Control-Allow-Credentials true")
	}
	var out strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&out, "%sadd_header %s always;\n", indent, l)
	}
	return out.String()
}

var (
	luaBlockStart = regexp.MustCompile(`^\s*(\w+_by_lua_block)\s*\{`)
	// The Lua module's own directives, and the placeholder server of the
	// Lua upstream, which a plain NGINX does not have.
	plainDropLine = regexp.MustCompile(`^\s*(load_module\s.*(ndk_http|ngx_http_lua)_module\.so.*|lua_\w+\s.*|server 0\.0\.0\.1;)\s*$`)
	unixListen    = regexp.MustCompile(`listen unix:[^;\s]+;`)
)

// editConfig applies edit to every Lua block of conf. The rendered Lua is
// brace-balanced on each line, so counting braces finds a block's end.
func editConfig(conf string, edit luaEdit, plain bool) (string, error) {
	var out, block strings.Builder
	directive, depth := "", 0
	for _, line := range strings.SplitAfter(conf, "\n") {
		if directive == "" {
			if m := luaBlockStart.FindStringSubmatch(line); m != nil {
				directive = m[1]
			} else {
				if !(plain && plainDropLine.MatchString(line)) {
					out.WriteString(line)
				}
				continue
			}
		}
		block.WriteString(line)
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth == 0 {
			out.WriteString(edit(directive, block.String()))
			block.Reset()
			directive = ""
		}
	}
	if directive != "" {
		return "", fmt.Errorf("unterminated %s", directive)
	}
	return out.String(), nil
}

// startScratch copies Switchyard's live NGINX prefix, edits every
// configuration file (Lua blocks, listen addresses, the control socket) and
// starts NGINX on it. kind "plain" also removes the Lua module's setup.
// startOverheadFixture runs switchyard serving the fixture's host from
// both echo backends, with per-request metrics on, the setup every
// overhead measurement compares with.
func startOverheadFixture(t *testing.T) (nginx string, f *fixture, sy *harness.Switchyard) {
	t.Helper()
	nginx = harness.Nginx(t)
	f = newFixture(t)
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", f.portA, f.portB))
	// With --metrics-addr, as deployed: NGINX counts every request for
	// the per-request metrics, and the overhead includes it.
	// Server blocks: the plain copy is made of them (plainConfig). The Lua
	// routing path is measured against it in TestBenchOverheadRouting.
	sy = harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		"--lua-routing=false")
	waitServed(t, sy, f.host, "", 30*time.Second)
	return nginx, f, sy
}

func startScratch(t *testing.T, nginx string, sy *harness.Switchyard, kind string, edit luaEdit) *scratch {
	t.Helper()
	s := &scratch{prefix: filepath.Join(harness.StateDir(t), "nginx"), httpAddr: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}
	s.socket = filepath.Join(s.prefix, "control.sock")
	httpsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	src := sy.Prefix()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(s.prefix, rel)
		top := strings.Split(rel, string(filepath.Separator))[0]
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case top == "logs" || top == "tmp" || !d.Type().IsRegular():
			return nil // the copy writes its own logs; sockets and pid files are the live NGINX's
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if top == "conf" && strings.HasSuffix(path, ".conf") {
			text, err := editConfig(string(data), edit, kind == "plain")
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			text = strings.ReplaceAll(text, sy.HTTPAddr, s.httpAddr)
			text = strings.ReplaceAll(text, sy.HTTPSAddr, httpsAddr)
			text = unixListen.ReplaceAllLiteralString(text, "listen unix:"+s.socket+";")
			data = []byte(text)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	for _, d := range []string{"logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(s.prefix, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// Workers may run as an unprivileged user: let them write the logs and
	// temp files of the copy, as the applier does for the live prefix.
	_ = os.Chmod(filepath.Join(s.prefix, "tmp"), 0o777)
	args := []string{"-p", s.prefix + "/", "-c", "conf/nginx.conf", "-e", "stderr"}
	if out, err := exec.Command(nginx, append([]string{"-t", "-q"}, args...)...).CombinedOutput(); err != nil {
		conf, _ := os.ReadFile(filepath.Join(s.prefix, "conf", "nginx.conf"))
		t.Fatalf("nginx -t of the %s copy: %v\n%s\n%s", kind, err, out, conf)
	}
	cmd := exec.Command(nginx, append(args, "-g", "daemon off;")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s copy: %v", kind, err)
	}
	s.master = cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGQUIT)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("output of the %s NGINX copy:\n%s", kind, output.String())
		}
	})
	return s
}

// copyDynamic posts the live Switchyard's backends, and the (empty, in
// these benchmarks) certificate set, to the copy's Lua endpoint.
func (s *scratch) copyDynamic(t *testing.T, sy *harness.Switchyard) {
	t.Helper()
	live := harness.ControlClient(sy.ControlSocket(), 5*time.Second)
	copyClient := harness.ControlClient(s.socket, 5*time.Second)
	var backends []byte
	harness.WaitFor(t, 10*time.Second, "the copy's Lua endpoint", func() error {
		var err error
		if backends == nil {
			if backends, err = harness.ControlCall(live, http.MethodGet, "/configuration/backends", nil); err != nil {
				return err
			}
		}
		if _, err = harness.ControlCall(copyClient, http.MethodPost, "/configuration/backends", backends); err != nil {
			return err
		}
		_, err = harness.ControlCall(copyClient, http.MethodPost, "/configuration/certificates", []byte(`{"certificates":{},"servers":{}}`))
		return err
	})
}

func waitScratch(t *testing.T, s *scratch, host string) {
	t.Helper()
	harness.WaitFor(t, 10*time.Second, "NGINX copy at "+s.prefix, func() error {
		return getOnce(http.DefaultClient, s.httpAddr, host)
	})
}
