package lua_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchBackendPosts (SWITCHYARD_BENCH=1, make bench) reports, with
// SWITCHYARD_SCALE_N backends stored (10,000 by default, one per Ingress as
// in the scale benchmark), a one-endpoint change from the POST to every
// worker answering from the new endpoint, and the bytes posted: posting
// every backend (as the applier did before deltas, and still does with
// --full-backend-posts) against posting a delta of that backend, on the
// same NGINX in the same run. Timings are reported, never asserted.
func TestBenchBackendPosts(t *testing.T) {
	if os.Getenv("SWITCHYARD_BENCH") == "" {
		t.Skip("set SWITCHYARD_BENCH=1 (make bench) to run benchmarks")
	}
	n := 10000
	if v := os.Getenv("SWITCHYARD_SCALE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SWITCHYARD_SCALE_N=%q: want a positive number", v)
		}
	}
	dp := startDataPlaneWith(t, "64m") // the renderer's smallest backends dict
	eps, ids := startBackends(t, "bench", 2)
	list := make([]backend, n)
	for i := range list {
		list[i] = backend{
			Name:      fmt.Sprintf("scale-ing-%d-svc-%d-80", i, i),
			Service:   map[string]string{"namespace": "scale", "name": fmt.Sprintf("svc-%d", i), "port": "80"},
			Endpoints: []endpoint{{"10.1.2.3", "8080"}},
		}
	}
	list[0].Endpoints = eps[:1]
	version := dp.postFull(list...)
	dp.untilEveryWorker(t, list[0].Name, ids[0])

	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nbackends posts: %d backends stored, a one-endpoint change, POST to every worker answering from the new endpoint\n",
		strings.Repeat("=", 100), n)
	modes := []bool{true, false}
	if status, _ := dp.configRequest("POST", "/configuration/backends/delta", "{}"); status == 404 {
		// A Lua of before deltas (to compare it): full posts alone.
		fmt.Fprintf(&rep, "(this Lua has no delta endpoint)\n")
		modes = modes[:1]
	}
	for _, full := range modes {
		var post, traffic []time.Duration
		var bytes int
		for i := range 20 {
			to := (i + 1) % 2
			list[0].Endpoints = eps[to : to+1]
			var body []byte
			var err error
			path := "/configuration/backends"
			if full {
				body, err = json.Marshal(list)
			} else {
				path += "/delta"
				body, err = json.Marshal(delta{Base: version, Backends: list[:1]})
			}
			must(t, err)
			bytes += len(body)
			begin := time.Now()
			version = dp.version(dp.configRequest("POST", path, string(body)))
			post = append(post, time.Since(begin))
			dp.untilEveryWorker(t, list[0].Name, ids[to])
			traffic = append(traffic, time.Since(begin))
		}
		mode := "delta of the changed backend"
		if full {
			mode = "every backend (--full-backend-posts)"
		}
		fmt.Fprintf(&rep, "-- %s: %d bytes per change\n", mode, bytes/len(post))
		fmt.Fprintf(&rep, "   POST answered        %s\n", quantiles(post))
		fmt.Fprintf(&rep, "   every worker on it   %s\n", quantiles(traffic))
	}
	t.Log(rep.String())
}

// untilEveryWorker sends requests on fresh connections until each worker
// has answered from the endpoint id (bounded).
func (dp *dataPlane) untilEveryWorker(t *testing.T, name, id string) {
	t.Helper()
	workers := dp.workers()
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < len(workers) {
		if time.Now().After(deadline) {
			t.Fatalf("workers answering from %s: %v of %v", id, seen, workers)
		}
		if r := dp.get("/", name); r.status == 200 && r.backend == id {
			seen[r.worker] = true
		}
	}
}

func quantiles(samples []time.Duration) string {
	s := slices.Clone(samples)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)].Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d median=%s p99=%s max=%s", len(s), q(0.5), q(0.99), q(1))
}
