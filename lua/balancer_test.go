package lua_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of switchyard/balancer.lua (the per-worker backend registry, the
// balancer phase and its hooks) with the default algorithm
// (switchyard/balancers/round_robin.lua), run by TestDataPlane.

func (dp *dataPlane) testRoundRobin(t *testing.T) {
	eps, ids := startBackends(t, "rr", 3)
	dp.postBackends(backend{Name: "default-rr-80", Service: svc("rr"), Endpoints: eps, LoadBalance: "round_robin"})

	const requests = 60
	counts := map[string]int{}
	workers := map[string]bool{}
	for range requests {
		r := dp.get("/rr", "default-rr-80")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		counts[r.backend]++
		workers[r.worker] = true
	}
	minC, maxC := requests, 0
	for _, id := range ids {
		minC, maxC = min(minC, counts[id]), max(maxC, counts[id])
	}
	// Each worker rotates on its own, so each adds at most 1 to the spread.
	t.Logf("per endpoint %v over %d workers", counts, len(workers))
	if minC == 0 || maxC-minC > len(workers) {
		t.Errorf("uneven round robin: %v (workers %d)", counts, len(workers))
	}
}

// testRotationKept pins one keep-alive connection (so one worker) and checks
// that a new endpoint list continues the rotation where it was instead of
// starting over.
func (dp *dataPlane) testRotationKept(t *testing.T) {
	eps, ids := startBackends(t, "rot", 5)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	worker := ""
	get := func() string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+dp.httpAddr+"/", nil)
		req.Header.Set("X-Test-Backend", "default-rot-80")
		resp, err := client.Do(req)
		must(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if w := resp.Header.Get("X-Worker-Pid"); worker == "" {
			worker = w
		} else if w != worker {
			t.Fatalf("keep-alive connection moved from worker %s to %s", worker, w)
		}
		return resp.Header.Get("X-Backend")
	}

	current := eps[:3]
	dp.postBackends(backend{Name: "default-rot-80", Endpoints: current})
	last := get()
	for n := 4; n <= 5; n++ {
		// grow the list at the end: the index after `last` stays valid
		current = eps[:n]
		dp.postBackends(backend{Name: "default-rot-80", Endpoints: current})
		want := ids[(slices.Index(ids, last)+1)%n]
		if got := get(); got != want {
			t.Fatalf("after changing to %d endpoints got %s, want %s (rotation restarted?)", n, got, want)
		}
		last = want
	}
}

func (dp *dataPlane) testUnavailable(t *testing.T) {
	eps, _ := startBackends(t, "ok", 1)
	dp.postBackends(
		backend{Name: "default-ok-80", Endpoints: eps},
		backend{Name: "default-empty-80", Service: svc("empty"), Endpoints: []endpoint{}},
	)
	tests := []struct {
		name, backend string
		status        int
	}{
		{"known backend", "default-ok-80", 200},
		{"unknown backend", "default-missing-80", 503},
		{"no upstream name", "", 503},
		{"empty endpoints", "default-empty-80", 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := dp.get("/", tt.backend); r.status != tt.status {
				t.Errorf("status %d, want %d (%s)", r.status, tt.status, r.body)
			}
		})
	}
}

func (dp *dataPlane) testEndpointChange(t *testing.T) {
	oldEps, oldIDs := startBackends(t, "old", 2)
	newEps, newIDs := startBackends(t, "new", 2)
	dp.postBackends(backend{Name: "default-change-80", Endpoints: oldEps})

	// Warm up both workers on the old endpoints.
	seen := map[string]bool{}
	for i := 0; len(seen) < 2 && i < 200; i++ {
		r := dp.get("/", "default-change-80")
		if r.status != 200 || !slices.Contains(oldIDs, r.backend) {
			t.Fatalf("before change: %d %q", r.status, r.backend)
		}
		seen[r.worker] = true
	}
	if len(seen) < 2 {
		t.Fatalf("requests did not reach both workers: %v", seen)
	}
	workersBefore := dp.workers()

	dp.postBackends(backend{Name: "default-change-80", Endpoints: newEps})
	posted := time.Now()

	// Every request after the 201 must see the new endpoints, on every
	// worker: rewrite() syncs before it looks the backend up.
	firstSeen := map[string]time.Duration{}
	for i := 0; i < 200 && (len(firstSeen) < 2 || i < 40); i++ {
		r := dp.get("/", "default-change-80")
		if r.status != 200 || !slices.Contains(newIDs, r.backend) {
			t.Fatalf("request %d after change went to %q (status %d), want one of %v", i, r.backend, r.status, newIDs)
		}
		if _, ok := firstSeen[r.worker]; !ok {
			firstSeen[r.worker] = time.Since(posted)
		}
	}
	t.Logf("first new-endpoint response per worker after POST: %v", firstSeen)
	if len(firstSeen) < 2 {
		t.Errorf("new endpoints seen on %d workers, want 2", len(firstSeen))
	}
	for w, d := range firstSeen {
		if d > 100*time.Millisecond {
			t.Errorf("worker %s served the new endpoints only after %v", w, d)
		}
	}
	if after := dp.workers(); !slices.Equal(workersBefore, after) {
		t.Errorf("worker PIDs changed: %v -> %v (reload?)", workersBefore, after)
	}
}

var loadedRE = regexp.MustCompile(`\[notice\] (\d+)#\d+: .*loaded backends version (\d+)`)

// testTimerSync checks that workers that get no traffic still load a new
// version, from their ngx.timer.every.
func (dp *dataPlane) testTimerSync(t *testing.T) {
	eps, _ := startBackends(t, "timer", 1)
	// The 201 text carries the version number to look for in the log.
	body, _ := json.Marshal([]backend{{Name: "default-timer-80", Endpoints: eps, LoadBalance: "least_conn"}})
	status, resp := dp.configRequest("POST", "/configuration/backends", string(body))
	posted := time.Now()
	if status != 201 {
		t.Fatalf("POST: %d %s", status, resp)
	}
	version := strings.TrimSpace(strings.TrimPrefix(resp, "backends version "))
	workers := dp.workers()
	// The timer ticks every 100 ms; allow for a busy machine.
	deadline := posted.Add(time.Second)
	for {
		loaded := map[string]bool{}
		for _, m := range loadedRE.FindAllStringSubmatch(dp.errorLog(), -1) {
			if m[2] == version {
				loaded[m[1]] = true
			}
		}
		if len(loaded) == len(workers) {
			t.Logf("both workers loaded version %s %v after the POST without traffic", version, time.Since(posted).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers that loaded version %s: %v, want all of %v", version, loaded, workers)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The unknown load-balance fell back to round robin.
	if r := dp.get("/", "default-timer-80"); r.status != 200 {
		t.Errorf("unknown load-balance: status %d", r.status)
	}
	if !strings.Contains(dp.errorLog(), `unknown load-balance "least_conn"`) {
		t.Errorf("no warning about the unknown load-balance")
	}
}

func (dp *dataPlane) testDeadEndpoint(t *testing.T) {
	eps, ids := startBackends(t, "live", 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, deadPort, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens there any more: connection refused
	dp.postBackends(backend{Name: "default-dead-80", Endpoints: []endpoint{eps[0], {"127.0.0.1", deadPort}, eps[1]}})

	counts := map[string]int{}
	for i := range 30 {
		r := dp.get("/", "default-dead-80")
		if r.status != 200 {
			t.Fatalf("request %d: status %d %s", i, r.status, r.body)
		}
		counts[r.backend]++
	}
	if counts[ids[0]] == 0 || counts[ids[1]] == 0 {
		t.Errorf("live endpoints not both used: %v", counts)
	}
	if !strings.Contains(dp.errorLog(), "127.0.0.1:"+deadPort) {
		t.Errorf("the dead endpoint was never tried (no connect error logged)")
	}

	// Only dead endpoints: nginx gives up after proxy_next_upstream_tries.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, deadPort2, _ := net.SplitHostPort(ln2.Addr().String())
	ln2.Close()
	dp.postBackends(backend{Name: "default-alldead-80", Endpoints: []endpoint{{"127.0.0.1", deadPort}, {"127.0.0.1", deadPort2}}})
	if r := dp.get("/", "default-alldead-80"); r.status != 502 {
		t.Errorf("all endpoints dead: status %d, want 502", r.status)
	}
}

func (dp *dataPlane) testNoRewrite(t *testing.T) {
	eps, ids := startBackends(t, "norw", 1)
	dp.postBackends(backend{Name: "default-norw-80", Endpoints: eps})
	if r := dp.get("/no-rewrite/x", "default-norw-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("known backend: %d %q", r.status, r.backend)
	}
	// Stock nginx turns ngx.exit(503) in balancer_by_lua into 500 (no
	// OpenResty status patch). What matters: the placeholder 0.0.0.1 is
	// never contacted.
	if r := dp.get("/no-rewrite/x", "default-missing-80"); r.status != 500 && r.status != 503 {
		t.Errorf("unknown backend in balancer phase: %d %q", r.status, r.body)
	}
	if strings.Contains(dp.errorLog(), "0.0.0.1") {
		t.Errorf("the placeholder upstream 0.0.0.1 was contacted")
	}
}

func (dp *dataPlane) testNamedRewrite(t *testing.T) {
	eps, ids := startBackends(t, "named", 1)
	otherEps, _ := startBackends(t, "named-other", 1)
	dp.postBackends(backend{Name: "default-named-80", Endpoints: eps}, backend{Name: "default-other-80", Endpoints: otherEps})
	for _, header := range []string{"", "default-other-80", "default-missing-80"} {
		if r := dp.get("/named/x", header); r.status != 200 || r.backend != ids[0] {
			t.Errorf("X-Test-Backend %q: %d %q, want the named backend %s", header, r.status, r.backend, ids[0])
		}
	}
	// The name is still checked against the published backends.
	dp.postBackends(backend{Name: "default-other-80", Endpoints: otherEps})
	if r := dp.get("/named/x", "default-other-80"); r.status != 503 {
		t.Errorf("named backend removed: %d %q, want 503", r.status, r.backend)
	}
}
