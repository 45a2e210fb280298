package lua_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of switchyard/metrics.lua, run by TestDataPlane
// (dataplane_test.go): requests are counted in the switchyard_metrics
// dict and read back through the configuration endpoint's GET /metrics.

type metricsDump struct {
	Buckets  map[string][]float64 `json:"buckets"`
	Values   map[string]float64   `json:"-"`
	Capacity int64                `json:"capacity"`
	Free     int64                `json:"free"`
}

// metrics reads GET /metrics: a JSON line, then "<key>\t<value>" lines.
func (dp *dataPlane) metrics(t *testing.T) metricsDump {
	t.Helper()
	status, body := dp.configRequest("GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("GET /metrics: %d %s", status, body)
	}
	head, lines, _ := strings.Cut(body, "\n")
	var d metricsDump
	if err := json.Unmarshal([]byte(head), &d); err != nil {
		t.Fatalf("GET /metrics: %v in %.200s", err, body)
	}
	d.Values = map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(lines, "\n"), "\n") {
		if line == "" {
			continue
		}
		tab := strings.LastIndexByte(line, '\t')
		v, err := strconv.ParseFloat(line[tab+1:], 64)
		if tab < 0 || err != nil {
			t.Fatalf("GET /metrics: line %q", line)
		}
		d.Values[line[:tab]] = v
	}
	return d
}

// count is the number of observations of histogram code for labels: the
// sum of its (not cumulative) buckets.
func (d metricsDump) count(code, labels string) float64 {
	n := 0.0
	for i := 1; i <= len(d.Buckets[code])+1; i++ {
		n += d.Values[fmt.Sprintf("%s\x01%d\x01%s", code, i, labels)]
	}
	return n
}

func metricLabels(status, method, path string) string {
	// status, method, path, namespace, ingress, service, canary, host
	return strings.Join([]string{status, method, path, "shop", "web", "web", "", ""}, "\x01")
}

func (dp *dataPlane) request(t *testing.T, method, path string, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+dp.httpAddr+path, nil)
	must(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := dp.proxy.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitMetrics polls until ok holds: the log phase runs after the response
// was sent, so a client can read its answer before it is counted.
func (dp *dataPlane) waitMetrics(t *testing.T, what string, ok func(metricsDump) bool) metricsDump {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := dp.metrics(t)
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in the metrics dict (%d values)", what, len(d.Values))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (dp *dataPlane) testMetrics(t *testing.T) {
	eps, _ := startBackends(t, "metrics", 1)
	dp.postBackends(backend{Name: "metrics", Service: svc("web"), Endpoints: eps})
	hdr := map[string]string{"X-Test-Backend": "metrics", "X-Test-Path": "/m"}
	const n = 5
	for range n {
		if s := dp.request(t, "GET", "/metrics-test/a?x=1", hdr); s != 200 {
			t.Fatalf("GET: %d", s)
		}
	}
	// A method a client made up is folded into OTHER.
	dp.request(t, "FOOBAR", "/metrics-test/b", hdr)
	get, other := metricLabels("200", "GET", "/m"), metricLabels("200", "OTHER", "/m")
	d := dp.waitMetrics(t, "5 GET and 1 OTHER", func(d metricsDump) bool {
		return d.count("rd", get) == n && d.count("rd", other) == 1
	})
	for _, code := range []string{"rd", "cd", "hd", "sd", "rq", "rs", "bs"} {
		if got := d.count(code, get); got != n {
			t.Errorf("histogram %s counted %v GET requests, want %d", code, got, n)
		}
		if _, ok := d.Values[code+"\x01s\x01"+get]; !ok {
			t.Errorf("histogram %s has no sum", code)
		}
	}
	if len(d.Buckets["rd"]) != 11 || len(d.Buckets["rq"]) != 10 || len(d.Buckets["bs"]) != 7 {
		t.Errorf("bucket bounds are not ingress-nginx's: %v", d.Buckets)
	}
	for key := range d.Values {
		if strings.Contains(key, "FOOBAR") || strings.Contains(key, "x=1") || strings.Contains(key, "/metrics-test/") {
			t.Errorf("a label holds the request's method or URI: %q", key)
		}
	}
	// The control endpoint's own requests are not counted.
	for key := range d.Values {
		if strings.Contains(key, "\x01/metrics\x01") {
			t.Errorf("a scrape was counted: %q", key)
		}
	}
}

// A location that passes its labels to balancer.rewrite (as every
// rendered one does) is counted under them, the host label included;
// nothing is counted under its variables. Each method is a series of its
// own, with every histogram observed.
func (dp *dataPlane) testMetricsLiteralLabels(t *testing.T) {
	eps, _ := startBackends(t, "metrics-literal", 1)
	dp.postBackends(backend{Name: "metrics-literal", Service: svc("web"), Endpoints: eps})
	hdr := map[string]string{"X-Test-Backend": "metrics-literal"}
	const gets, posts = 3, 2
	for range gets {
		if s := dp.request(t, "GET", "/metrics-literal/a", hdr); s != 200 {
			t.Fatalf("GET: %d", s)
		}
	}
	for range posts {
		if s := dp.request(t, "POST", "/metrics-literal/a", hdr); s != 200 {
			t.Fatalf("POST: %d", s)
		}
	}
	labels := func(method string) string {
		return strings.Join([]string{"200", method, "/lit", "shop", "1web", "web", "", "lit.example.com"}, "\x01")
	}
	get, post := labels("GET"), labels("POST")
	d := dp.waitMetrics(t, "3 GET and 2 POST under the literal labels", func(d metricsDump) bool {
		return d.count("rd", get) == gets && d.count("rd", post) == posts
	})
	for _, code := range []string{"rd", "cd", "hd", "sd", "rq", "rs", "bs"} {
		if got := d.count(code, get); got != gets {
			t.Errorf("histogram %s counted %v GET requests, want %d", code, got, gets)
		}
	}
	// Each answer is more than 10 bytes: the bytes_sent sum says the
	// values were read, not just counted.
	if sum := d.Values["bs\x01s\x01"+get]; sum < 10*gets {
		t.Errorf("bytes_sent sum %v for %d GET requests", sum, gets)
	}
	if sum := d.Values["rq\x01s\x01"+post]; sum < 10*posts {
		t.Errorf("request_size sum %v for %d POST requests", sum, posts)
	}
	for key := range d.Values {
		if strings.Contains(key, "vars") {
			t.Errorf("counted under the location's variables: %q", key)
		}
	}
}

// request_duration observes $request_time (metrics.lua computes it from
// the request's start and NGINX's clock instead of reading the variable):
// a backend that answers after 300 ms puts the request in the bucket of
// 0.5 s or a later one, with a sum in seconds, at least as long as the
// time to the backend's header.
func (dp *dataPlane) testMetricsRequestTime(t *testing.T) {
	const delay = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(delay)
		fmt.Fprint(w, "slow")
	}))
	t.Cleanup(srv.Close)
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	must(t, err)
	dp.postBackends(backend{Name: "metrics-slow", Service: svc("web"), Endpoints: []endpoint{{host, port}}})
	hdr := map[string]string{"X-Test-Backend": "metrics-slow", "X-Test-Path": "/slow"}
	if s := dp.request(t, "GET", "/metrics-test/slow", hdr); s != 200 {
		t.Fatalf("GET: %d", s)
	}
	labels := metricLabels("200", "GET", "/slow")
	d := dp.waitMetrics(t, "the slow request", func(d metricsDump) bool { return d.count("rd", labels) == 1 })
	bounds := d.Buckets["rd"]
	for i, bound := range bounds {
		if bound < delay.Seconds() && d.Values[fmt.Sprintf("rd\x01%d\x01%s", i+1, labels)] != 0 {
			t.Errorf("a %v request was counted in the bucket of %v s", delay, bound)
		}
	}
	// NGINX times the request on its cached wall clock and the upstream
	// on its monotonic one, each in whole milliseconds: the request may
	// come out up to 2 ms shorter than its header wait.
	const granularity = 0.002
	sum, header := d.Values["rd\x01s\x01"+labels], d.Values["hd\x01s\x01"+labels]
	if sum < delay.Seconds() || sum > 30 || sum < header-granularity {
		t.Errorf("request_duration sum %v s for a %v request whose header took %v s", sum, delay, header)
	}
}

// A full dict never fails a request: new series are left out and the
// requests that lost data are counted in "dropped".
func (dp *dataPlane) testMetricsDictFull(t *testing.T) {
	eps, _ := startBackends(t, "metrics-full", 1)
	dp.postBackends(backend{Name: "metrics", Service: svc("web"), Endpoints: eps})
	for i := 0; dp.metrics(t).Values["dropped"] == 0; i++ {
		if i == 2000 {
			t.Fatal("2000 series and the 256k dict is not full")
		}
		hdr := map[string]string{"X-Test-Backend": "metrics", "X-Test-Path": fmt.Sprintf("/series-%d", i)}
		if s := dp.request(t, "GET", "/metrics-test/", hdr); s != 200 {
			t.Fatalf("request %d with a full dict: %d", i, s)
		}
	}
	// The series counted before the dict filled up keep counting (unless
	// the request lands in a bucket of theirs not used yet: a new key,
	// dropped and counted as such).
	get := metricLabels("200", "GET", "/m")
	d := dp.metrics(t)
	before, dropped := d.count("rd", get), d.Values["dropped"]
	if s := dp.request(t, "GET", "/metrics-test/", map[string]string{"X-Test-Backend": "metrics", "X-Test-Path": "/m"}); s != 200 {
		t.Fatalf("request with a full dict: %d", s)
	}
	dp.waitMetrics(t, "an existing series after the dict filled", func(d metricsDump) bool {
		return d.count("rd", get) == before+1 || d.Values["dropped"] > dropped
	})
}

// A reload replaces the workers: what the old ones counted since their
// last flush is added to the dict as they exit, and the counts in the
// dict survive (the dict keeps its size, so NGINX keeps it).
func (dp *dataPlane) testMetricsKeptOverReload(t *testing.T) {
	eps, _ := startBackends(t, "metrics-reload", 1)
	dp.postBackends(backend{Name: "metrics", Service: svc("web"), Endpoints: eps})
	get := metricLabels("200", "GET", "/m")
	before := dp.metrics(t).count("rd", get)
	if before == 0 {
		t.Fatal("no earlier GET counted")
	}
	hdr := map[string]string{"X-Test-Backend": "metrics", "X-Test-Path": "/m"}
	for range 3 {
		if s := dp.request(t, "GET", "/metrics-test/", hdr); s != 200 {
			t.Fatalf("GET: %d", s)
		}
	}
	must(t, syscall.Kill(dp.cmd.Process.Pid, syscall.SIGHUP))
	dp.waitMetrics(t, "the requests before a reload", func(d metricsDump) bool {
		return d.count("rd", get) == before+3
	})
}
