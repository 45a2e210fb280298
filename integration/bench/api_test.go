package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/integration/kube"
)

// profileDirEnv names a directory where TestBenchAPI saves a heap profile of
// switchyard per N, and TestBenchEndpointDeltas a CPU profile of its endpoint
// changes (go tool pprof -top FILE); unset, none is saved.
const profileDirEnv = "SWITCHYARD_BENCH_PROFILE_DIR"

const (
	apiNS            = "bench"
	apiHost          = "bench.api.test"
	apiPoll          = 2 * time.Millisecond // fresh connection per poll
	apiChangeTimeout = 30 * time.Second     // one API write to traffic on it
	apiLoaders       = 16                   // goroutines creating objects
	apiSmallN        = 1000
	apiTargetRSS     = 300_000_000 // bytes: 300 MB for the all-in-one process at 10,000 Ingresses
	apiSettle        = 15 * time.Second
)

// apiReport is the one block TestBenchAPI logs, written by its subtests.
type apiReport struct {
	strings.Builder
	targets [][2]string // name, result: the summary at the end
}

func (r *apiReport) line(name, format string, args ...any) {
	fmt.Fprintf(r, "%-42s %s\n", name, fmt.Sprintf(format, args...))
}

func (r *apiReport) section(title string) { fmt.Fprintf(r, "-- %s\n", title) }

// fail records a failure in the report and fails t (a subtest), which the
// caller then leaves.
func (r *apiReport) fail(t *testing.T, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.line("FAILED", "%s", msg)
	t.Error(msg)
}

// TestBenchAPI reports, from one run against a real kube-apiserver and etcd
// with echo pods in network namespaces: API write to traffic (an Ingress
// create to its first 200, an EndpointSlice update to traffic on the new
// endpoint), and switchyard's resident memory with 1,000 and
// SWITCHYARD_SCALE_N (10,000) Ingresses loaded through the API, each with its
// own Service and EndpointSlice, with the time from start to the last host
// served. Each part has its own cluster, torn down before the next one.
// Timings and memory are reported, never asserted; the test fails only when
// something is never served.
func TestBenchAPI(t *testing.T) {
	requireBench(t)
	harness.Nginx(t)
	bin := harness.Binary(t)
	testStart := time.Now()

	rep := &apiReport{}
	fmt.Fprintf(rep, "\n%s\n", strings.Repeat("=", 100))
	fmt.Fprintf(rep, "API: Switchyard on a real kube-apiserver %s + etcd (%d CPUs, GOMAXPROCS=%d)\n",
		kube.KubeVersion, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	rep.line("machine at start", "%s", machineLoad())
	defer func() {
		rep.line("machine at end", "%s", machineLoad())
		rep.line("test wall time", "%s", time.Since(testStart).Round(100*time.Millisecond))
		t.Log(rep.String())
	}()

	t.Run("write-to-traffic", func(t *testing.T) { benchAPIWrites(t, bin, rep) })
	t.Run(fmt.Sprintf("burst-%d", apiSmallN), func(t *testing.T) { benchAPIBurst(t, bin, apiSmallN, rep) })
	for _, n := range slices.Compact([]int{min(apiSmallN, scaleN(t)), scaleN(t)}) {
		t.Run(fmt.Sprintf("memory-%d", n), func(t *testing.T) { benchAPIMemory(t, bin, n, rep) })
	}

	rep.section("design targets (reported, not asserted)")
	for _, l := range rep.targets {
		rep.line(l[0], "%s", l[1])
	}
	rep.line("  ingress-nginx reference", "users report 1.5 GB+ of controller memory at 10,000 Ingresses")
}

func (r *apiReport) target(name, result string) {
	r.targets = append(r.targets, [2]string{name, result})
}

// benchAPIWrites measures API write → traffic with one Ingress on two echo
// pods: 20 new Ingresses (each its own host) to their first 200, then 50
// EndpointSlice updates alternating between the pods to traffic on the new one.
func benchAPIWrites(t *testing.T, bin string, rep *apiReport) {
	ctx := t.Context()
	cluster := kube.Start(t)
	client := cluster.Client
	apiSetup(t, client)
	podA, podB := apiBackend(t, bin, "pod-a"), apiBackend(t, bin, "pod-b")
	rep.section(fmt.Sprintf("API write to traffic: echo pods in network namespaces, polled every %s with fresh connections", apiPoll))

	if _, err := client.CoreV1().Services(apiNS).Create(ctx, apiService("echo"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice, err := client.DiscoveryV1().EndpointSlices(apiNS).Create(ctx, apiSlice("echo", podA), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.NetworkingV1().Ingresses(apiNS).Create(ctx, apiIngress("bench", apiHost, "echo"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sy := harness.StartSwitchyard(t, "", "--kubeconfig", cluster.Kubeconfig, "--log-level", "warn")
	if _, err := waitAnswer(sy.HTTPAddr, apiHost, "/", "pod-a", apiPoll, apiChangeTimeout); err != nil {
		rep.fail(t, "first Ingress: %v", err)
		return
	}

	creates := series{name: "Ingress create to first 200 on its host"}
	createCalls := series{name: "  of which the Create call"}
	for i := range 20 {
		host := fmt.Sprintf("new-%d.api.test", i)
		begin := time.Now()
		if _, err := client.NetworkingV1().Ingresses(apiNS).Create(ctx, apiIngress(fmt.Sprintf("new-%d", i), host, "echo"), metav1.CreateOptions{}); err != nil {
			rep.fail(t, "create Ingress %d: %v", i, err)
			return
		}
		createCalls.samples = append(createCalls.samples, time.Since(begin))
		at, err := waitAnswer(sy.HTTPAddr, host, "/", "", apiPoll, apiChangeTimeout)
		if err != nil {
			rep.fail(t, "new Ingress %d: %v", i, err)
			return
		}
		creates.samples = append(creates.samples, at.Sub(begin))
	}
	fmt.Fprintf(rep, "%s  (includes NGINX reload)\n", creates)
	fmt.Fprintln(rep, createCalls)

	workers := sy.WorkerPIDs(t)
	endpoint := series{name: "EndpointSlice update to traffic on it"}
	updateCalls := series{name: "  of which the Update call"}
	for i := range 50 {
		addr, pod := podB, "pod-b"
		if i%2 == 1 {
			addr, pod = podA, "pod-a"
		}
		next := apiSlice("echo", addr)
		next.ResourceVersion = slice.ResourceVersion
		begin := time.Now()
		if slice, err = client.DiscoveryV1().EndpointSlices(apiNS).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			rep.fail(t, "update EndpointSlice %d: %v", i, err)
			return
		}
		updateCalls.samples = append(updateCalls.samples, time.Since(begin))
		at, err := waitAnswer(sy.HTTPAddr, apiHost, "/", pod, apiPoll, apiChangeTimeout)
		if err != nil {
			rep.fail(t, "endpoint change %d: %v", i, err)
			return
		}
		endpoint.samples = append(endpoint.samples, at.Sub(begin))
	}
	reloaded := !slices.Equal(sortedInts(workers), sortedInts(sy.WorkerPIDs(t)))
	fmt.Fprintf(rep, "%s  (no reload expected)\n", endpoint)
	fmt.Fprintln(rep, updateCalls)
	rep.line("NGINX reloaded during the 50 updates", "%v", reloaded)
	if testing.Verbose() {
		fmt.Fprintf(rep, "Ingress create samples: %v\nEndpointSlice update samples: %v\n", round(creates.samples), round(endpoint.samples))
	}
	rep.line("machine after this part", "%s", machineLoad())
	summarizeOutput(&rep.Builder, sy.Output.String())
	p99 := endpoint.quantile(0.99)
	rep.target("endpoint change p99 <= 500ms via the API", fmt.Sprintf("p99 %s, median %s: %s",
		p99.Round(time.Millisecond), endpoint.quantile(0.5).Round(time.Millisecond), met(p99 <= 500*time.Millisecond)))
	if reloaded {
		rep.fail(t, "an EndpointSlice update reloaded NGINX")
	}
}

// benchAPIBurst creates n Ingresses at once through the API, each with its
// own Service and EndpointSlice, while switchyard runs, and reports how
// many times NGINX reloaded for them (nginx_ingress_controller_success)
// and the time from the first create to the last host served. With Lua
// routing the hosts need no reload (issue 12's target: at most 2).
func benchAPIBurst(t *testing.T, bin string, n int, rep *apiReport) {
	cluster, client, _ := apiCluster(t)
	pod := apiBackend(t, bin, "pod-a")
	rep.section(fmt.Sprintf("burst: %d Ingresses created at once through the API while switchyard runs", n))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	sy := harness.StartSwitchyard(t, "", "--kubeconfig", cluster.Kubeconfig, "--log-level", "warn", "--metrics-addr", metricsAddr)
	before, err := reloadCount(metricsAddr)
	if err != nil {
		rep.fail(t, "%v", err)
		return
	}
	begin := time.Now()
	if err := apiLoad(t.Context(), client, n, pod); err != nil {
		rep.fail(t, "creating %d Ingresses: %v", n, err)
		return
	}
	created := time.Since(begin)
	for _, host := range []string{scaleHost(0), scaleHost(n / 2), scaleHost(n - 1)} {
		if _, err := waitAnswer(sy.HTTPAddr, host, "/", "pod-a", startupPoll, startupTimeout); err != nil {
			rep.fail(t, "%s after the burst: %v", host, err)
			return
		}
	}
	served := time.Since(begin)
	after, err := reloadCount(metricsAddr)
	if err != nil {
		rep.fail(t, "%v", err)
		return
	}
	rep.line("objects created", "%d in %s", 3*n, created.Round(100*time.Millisecond))
	rep.line("first create to the last host 200", "%s", served.Round(100*time.Millisecond))
	rep.line("NGINX reloads for the burst", "%.0f", after-before)
	rep.target(fmt.Sprintf("reloads for %d Ingresses created at once <= 2", n), fmt.Sprintf("%.0f: %s", after-before, met(after-before <= 2)))
}

// reloadCount scrapes nginx_ingress_controller_success, the reloads NGINX
// took.
func reloadCount(addr string) (float64, error) {
	v, err := firstSample(addr, "nginx_ingress_controller_success")
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

// benchAPIMemory loads n Ingresses, each with its own Service and
// EndpointSlice (all on one echo pod), into a fresh cluster, then starts
// switchyard and reports the time until the last host answers 200 and the
// memory of switchyard and NGINX then.
func benchAPIMemory(t *testing.T, bin string, n int, rep *apiReport) {
	cluster, client, cfg := apiCluster(t)
	pod := apiBackend(t, bin, "pod-a")
	rep.section(fmt.Sprintf("memory: %d Ingresses through the API, each with its own host, Service and EndpointSlice", n))

	begin := time.Now()
	if err := apiLoad(t.Context(), client, n, pod); err != nil {
		rep.fail(t, "loading %d Ingresses: %v", n, err)
		return
	}
	loaded := time.Since(begin)
	rep.line("objects created through the API", "%d in %s (%.0f/s; %d goroutines, client QPS %.0f, burst %d)",
		3*n, loaded.Round(100*time.Millisecond), float64(3*n)/loaded.Seconds(), apiLoaders, cfg.QPS, cfg.Burst)

	sy := &harness.Switchyard{
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		StateDir:  harness.StateDir(t),
	}
	profiling := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	// harness.StartSwitchyard's flags, started directly: it gives NGINX 30 s
	// to answer, while 10,000 Ingresses may need longer.
	begin = time.Now()
	sy.Process = harness.Start(t, bin, "run", "--kubeconfig", cluster.Kubeconfig, "--http-addr", sy.HTTPAddr,
		"--https-addr", sy.HTTPSAddr, "--state-dir", sy.StateDir, "--worker-processes", fmt.Sprint(harness.Workers),
		"--shutdown-grace", "5s", "--log-level", "warn", "--profiling-addr", profiling)
	pid := sy.Cmd.Process.Pid
	last := scaleHost(n - 1)

	// startup waits startupTimeout per call; allow about 60 ms per Ingress,
	// at least one call (10 minutes at 10,000).
	rounds := max(1, int((time.Duration(n)*60*time.Millisecond+startupTimeout-1)/startupTimeout))
	seen := map[int]bool{}
	var firstAnswer, served time.Time
	var firstStatus int
	var lastSeen string
	for range rounds {
		fa, fs, at, ls := startup(t, sy, last, seen)
		if firstAnswer.IsZero() {
			firstAnswer, firstStatus = fa, fs
		}
		served, lastSeen = at, ls
		if !served.IsZero() || sy.Exited() {
			break
		}
	}
	if !firstAnswer.IsZero() {
		rep.line("start to NGINX answering (any status)", "%s (first answer for %s: status %d)",
			firstAnswer.Sub(begin).Round(10*time.Millisecond), last, firstStatus)
	}
	if served.IsZero() {
		rep.fail(t, "%s not answered 200 within %s after start (polled every %s); last: %s",
			last, time.Duration(rounds)*startupTimeout, startupPoll, lastSeen)
		reportAPIMemory(t, rep, sy, pid, "when giving up", profiling, "")
		summarizeOutput(&rep.Builder, sy.Output.String())
		return
	}
	startToServed := served.Sub(begin)
	rep.line(fmt.Sprintf("start to last host (%s) 200", last), "%s (all objects already in the API; polled every %s)",
		startToServed.Round(10*time.Millisecond), startupPoll)
	rep.line("NGINX worker PIDs seen during start-up", "%d (%d per generation: a reload starts a new one)", len(seen), harness.Workers)
	rep.line("timeline after start (/proc start times)", "%s", startTimeline(sy, pid, seen))
	rss, peak := reportAPIMemory(t, rep, sy, pid, "at last host 200", "", "")

	for _, i := range []int{0, n / 2} {
		if _, err := waitAnswer(sy.HTTPAddr, scaleHost(i), "/", "pod-a", changePoll, apiChangeTimeout); err != nil {
			rep.fail(t, "host %d: %v", i, err)
		}
	}
	time.Sleep(apiSettle)
	profile := ""
	if dir := os.Getenv(profileDirEnv); dir != "" {
		profile = filepath.Join(dir, fmt.Sprintf("switchyard-heap-api-%d.pb.gz", n))
	}
	settled, settledPeak := reportAPIMemory(t, rep, sy, pid, fmt.Sprintf("%s later", apiSettle), profiling, profile)
	rep.line(fmt.Sprintf("Warning Events in %s after %s", apiNS, apiSettle), "%s", warningEvents(t, client))
	reportChurnMemory(t, rep, client, sy, pid, profiling, n)
	if size, count, err := dirSize(sy.ConfDir()); err == nil {
		rep.line("<state>/nginx/conf on disk", "%s in %d files", mib(size), count)
	}
	rep.line("machine after this part", "%s", machineLoad())
	summarizeOutput(&rep.Builder, sy.Output.String())

	if n == scaleN(t) {
		note := ""
		if n != defaultScaleN {
			note = fmt.Sprintf(" (the target is for %d Ingresses)", defaultScaleN)
		}
		rep.target("switchyard RSS <= 300 MB", fmt.Sprintf("at %d Ingresses%s: RSS %s at last host 200, %s settled: %s; peak %s: %s",
			n, note, mb(rss), mb(settled), met(max(rss, settled) <= apiTargetRSS), mb(max(peak, settledPeak)), met(max(peak, settledPeak) <= apiTargetRSS)))
		rep.target("start to last host served (reported)", fmt.Sprintf("at %d Ingresses: %s", n, startToServed.Round(10*time.Millisecond)))
	}
}

// reportAPIMemory reports switchyard's VmRSS and VmHWM and the NGINX
// master's and workers' RSS, and returns switchyard's. With profiling set, it
// also reports the Go heap after a forced GC and, with profile set, saves a
// heap profile there.
func reportAPIMemory(t *testing.T, rep *apiReport, sy *harness.Switchyard, pid int, when, profiling, profile string) (rss, peak int64) {
	rss, peak, err := procStatus(pid)
	if err == nil {
		rep.line("switchyard RSS "+when, "%s (peak %s; %s)", mib(rss), mib(peak), rssSplit(pid))
	} else {
		rep.line("switchyard RSS "+when, "unreadable: %v", err)
	}
	rep.line("plugin processes PSS "+when, "%s", pluginsPSS(t, pid))
	if master, err := readMasterPID(sy); err == nil {
		masterRSS, _, _ := procStatus(master)
		var each []string
		for _, w := range harness.ChildPIDs(t, master) {
			if r, _, err := procStatus(w); err == nil {
				each = append(each, mib(r))
			}
		}
		rep.line("NGINX master RSS "+when, "%s (workers: %s; shared pages count in each)", mib(masterRSS), strings.Join(each, ", "))
	} else {
		rep.line("NGINX master RSS "+when, "unreadable: %v", err)
	}
	if profiling == "" {
		return rss, peak
	}
	stats, err := goMemStats(profiling)
	if err != nil {
		rep.line("Go heap "+when, "unreadable: %v", err)
	} else {
		rep.line("Go heap after a forced GC", "live %s, in use %s, idle %s (released %s), runtime Sys %s, stacks %s, %d GCs",
			mib(stats["HeapAlloc"]), mib(stats["HeapInuse"]), mib(stats["HeapIdle"]), mib(stats["HeapReleased"]),
			mib(stats["Sys"]), mib(stats["Stack"]), stats["NumGC"])
	}
	if profile != "" {
		if err := saveProfile(profiling, "heap", profile); err != nil {
			rep.line("heap profile", "not saved: %v", err)
		} else {
			rep.line("heap profile", "%s (go tool pprof -top -sample_index=inuse_space %s)", profile, profile)
		}
	}
	return rss, peak
}

// goMemStats forces a GC in switchyard (pprof's gc=1) and reads the
// runtime.MemStats lines of its heap profile in text form.
func goMemStats(addr string) (map[string]int64, error) {
	resp, err := harness.NewClient().Get("http://" + addr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	stats := map[string]int64{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(scanner.Text(), "# "), " = ")
		if !ok || strings.ContainsAny(name, " \t") {
			continue
		}
		value, _, _ = strings.Cut(value, " / ") // "Stack = StackInuse / StackSys"
		if v, err := strconv.ParseInt(value, 10, 64); err == nil {
			stats[name] = v
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if _, ok := stats["HeapAlloc"]; !ok {
		return nil, fmt.Errorf("no MemStats in the heap profile")
	}
	return stats, nil
}

// saveProfile saves the profile that /debug/pprof/<query> answers (for
// instance "heap", or "profile?seconds=10" for the CPU) at path.
func saveProfile(addr, query, path string) error {
	client := harness.NewClient()
	client.Timeout = time.Minute // a CPU profile answers after its seconds
	resp, err := client.Get("http://" + addr + "/debug/pprof/" + query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// apiSetup creates the namespace and the IngressClass switchyard serves.
// apiCluster starts a cluster with the bench namespace and IngressClass,
// and a client that may write fast (QPS 500, burst 1000).
func apiCluster(t *testing.T) (*kube.Cluster, kubernetes.Interface, *rest.Config) {
	t.Helper()
	cluster := kube.Start(t)
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apiSetup(t, client)
	return cluster, client, cfg
}

func apiSetup(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apiNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
		Spec:       networkingv1.IngressClassSpec{Controller: "switchyard.dev/ingress-controller"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// apiBackend runs an echo server on :8080 in its own network namespace (the
// API server refuses loopback endpoint addresses) and returns its address.
func apiBackend(t *testing.T, bin, pod string) string {
	t.Helper()
	n := kube.NewNetns(t)
	n.Start(t, bin, "echo", "--listen", n.Addr+":8080", "--service", "echo", "--pod", pod)
	harness.WaitFor(t, 10*time.Second, "echo in "+pod, func() error {
		_, err := harness.Do(harness.NewClient(), "GET", "http://"+n.Addr+":8080/", "x", nil)
		return err
	})
	return n.Addr
}

func apiService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apiNS},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
}

func apiSlice(service, addr string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: service + "-1", Namespace: apiNS,
			Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
	}
}

func apiIngress(name, host, service string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apiNS},
		Spec: networkingv1.IngressSpec{
			IngressClassName: new("switchyard"),
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: new(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: service, Port: networkingv1.ServiceBackendPort{Name: "http"},
						}},
					}},
				}},
			}},
		},
	}
}

// apiLoad creates n Services, EndpointSlices (all on addr) and Ingresses
// with apiLoaders goroutines. A failed create is retried a few times; one
// that already exists (an earlier attempt got through) counts as done.
func apiLoad(ctx context.Context, client kubernetes.Interface, n int, addr string) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	var wg sync.WaitGroup
	for range apiLoaders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed() {
					return
				}
				svc := scaleService(i)
				err := apiRetry(func() error {
					_, err := client.CoreV1().Services(apiNS).Create(ctx, apiService(svc), metav1.CreateOptions{})
					return err
				})
				if err == nil {
					err = apiRetry(func() error {
						_, err := client.DiscoveryV1().EndpointSlices(apiNS).Create(ctx, apiSlice(svc, addr), metav1.CreateOptions{})
						return err
					})
				}
				if err == nil {
					err = apiRetry(func() error {
						_, err := client.NetworkingV1().Ingresses(apiNS).Create(ctx, apiIngress(fmt.Sprintf("ing-%d", i), scaleHost(i), svc), metav1.CreateOptions{})
						return err
					})
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("object %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// apiChanges is how many Ingress changes the memory part makes after the
// start, in each of apiChangeRounds rounds, to see whether memory grows
// with changes: the first round also warms what changes keep (the bus's
// write buffers of each stream written), the second must not add to it.
const (
	apiChanges      = 100
	apiChangeRounds = 2
)

// reportChurnMemory changes apiChanges Ingresses one after another (each
// a new proxy-read-timeout: a route change, no reload), lets them settle
// and reports switchyard's live heap and RSS, per round.
func reportChurnMemory(t *testing.T, rep *apiReport, client kubernetes.Interface, sy *harness.Switchyard, pid int, profiling string, n int) {
	before, err := goMemStats(profiling)
	if err != nil {
		rep.line("memory across changes", "unreadable: %v", err)
		return
	}
	rssBefore, _, _ := procStatus(pid)
	rep.line("before the changes", "Go heap live after a forced GC %s; switchyard RSS %s", mib(before["HeapAlloc"]), mib(rssBefore))
	for round := 1; round <= apiChangeRounds; round++ {
		begin := time.Now()
		for c := range apiChanges {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"nginx.ingress.kubernetes.io/proxy-read-timeout":"%d"}}}`, 60+round*apiChanges+c)
			err := apiRetry(func() error {
				_, err := client.NetworkingV1().Ingresses(apiNS).Patch(t.Context(), fmt.Sprintf("ing-%d", c%n), types.MergePatchType,
					[]byte(patch), metav1.PatchOptions{})
				return err
			})
			if err != nil {
				rep.fail(t, "change %d: %v", c, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(begin)
		time.Sleep(apiSettle)
		after, err := goMemStats(profiling)
		if err != nil {
			rep.line("memory across changes", "unreadable: %v", err)
			return
		}
		rss, _, _ := procStatus(pid)
		rep.line(fmt.Sprintf("after %d changes (one per %s), %s later", round*apiChanges, (took/apiChanges).Round(time.Millisecond), apiSettle),
			"Go heap live after a forced GC %s (%+.1f MiB since before); switchyard RSS %s", mib(after["HeapAlloc"]),
			float64(after["HeapAlloc"]-before["HeapAlloc"])/(1<<20), mib(rss))
	}
	reportAPIMemory(t, rep, sy, pid, "after the changes", "", "")
}

func apiRetry(create func() error) error {
	var err error
	for attempt := range 5 {
		if err = create(); err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// machineLoad is the load average and the other `switchyard run` and NGINX
// master processes on the machine (another benchmark may be running).
func machineLoad() string {
	load := "load average unreadable"
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			load = "load average " + strings.Join(f[:3], " ")
		}
	}
	runs, masters, apiservers := 0, 0, 0
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		switch {
		case filepath.Base(args[0]) == "switchyard" && len(args) > 1 && args[1] == "run":
			runs++
		case strings.HasPrefix(args[0], "nginx: master"):
			masters++
		case filepath.Base(args[0]) == "kube-apiserver":
			apiservers++
		}
	}
	return fmt.Sprintf("%s; running, ours included: %d `switchyard run`, %d NGINX masters, %d kube-apiservers (test pid %d)",
		load, runs, masters, apiservers, self)
}

// warningEvents counts the Warning Events in apiNS by reason: switchyard
// writes one per Ingress problem.
func warningEvents(t *testing.T, client kubernetes.Interface) string {
	events, err := client.CoreV1().Events(apiNS).List(t.Context(), metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		return "unreadable: " + err.Error()
	}
	reasons := map[string]int{}
	for _, e := range events.Items {
		reasons[e.Reason]++
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		parts = append(parts, fmt.Sprintf("%d %s", reasons[r], r))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// startTimeline says when, after switchyard started, the NGINX master and
// the worker generations seen (those still running) started, from the
// processes' start times in /proc (10 ms resolution).
func startTimeline(sy *harness.Switchyard, pid int, workers map[int]bool) string {
	base, err := procStart(pid)
	if err != nil {
		return err.Error()
	}
	var parts []string
	if master, err := readMasterPID(sy); err == nil {
		if at, err := procStart(master); err == nil {
			parts = append(parts, fmt.Sprintf("NGINX master +%s", (at-base).Round(10*time.Millisecond)))
		}
	}
	generations := map[time.Duration]int{}
	for w := range workers {
		if at, err := procStart(w); err == nil {
			generations[(at-base).Round(100*time.Millisecond)]++
		}
	}
	for _, at := range slices.Sorted(maps.Keys(generations)) {
		parts = append(parts, fmt.Sprintf("%d workers +%s", generations[at], at))
	}
	if gone := len(workers) - sumValues(generations); gone > 0 {
		parts = append(parts, fmt.Sprintf("%d workers already gone", gone))
	}
	return strings.Join(parts, ", ")
}

func sumValues(m map[time.Duration]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// procStart is when a process started, as time since boot: field 22 of
// /proc/<pid>/stat, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
func procStart(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it follow ") ".
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64) // field 22 is the 20th after the name
	if err != nil {
		return 0, err
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// rssSplit reads RssAnon and RssFile from /proc/<pid>/status: heap and
// stacks against mapped binary pages.
func rssSplit(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && (name == "RssAnon" || name == "RssFile") {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err == nil {
				parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(name, "Rss"), mib(kb<<10)))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// pluginsPSS is the proportional memory of switchyard's plugin processes
// (the built-ins share one), which with switchyard's own makes the
// controller's memory.
func pluginsPSS(t *testing.T, pid int) string {
	var n int
	var total int64
	for _, child := range harness.ChildPIDs(t, pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		if !strings.Contains(string(cmdline), "\x00plugin\x00") {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", child))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
		n++
	}
	return fmt.Sprintf("%s in %d process(es)", mb(total), n)
}

// mb is bytes in decimal megabytes and MiB, for targets stated in MB.
func mb(n int64) string { return fmt.Sprintf("%.0f MB (%s)", float64(n)/1e6, mib(n)) }
