package lua_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Tests of the balancing algorithms in switchyard/balancers/ (ewma, chash,
// chashsubset), run by TestDataPlane against the real NGINX with two workers.

// getWith is dp.get with extra request headers; it also returns the
// response headers.
func (dp *dataPlane) getWith(t *testing.T, path, backend string, hdr map[string]string) (proxyResponse, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+dp.httpAddr+path, nil)
	must(t, err)
	req.Header.Set("X-Test-Backend", backend)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := dp.proxy.Do(req)
	if err != nil {
		t.Fatalf("GET %s (backend %q): %v", path, backend, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return proxyResponse{resp.StatusCode, string(data), resp.Header.Get("X-Backend"), resp.Header.Get("X-Worker-Pid"),
		resp.Header.Get("X-Alternative")}, resp.Header
}

// startSlowBackend is a backend that answers after delay.
func startSlowBackend(t *testing.T, id string, delay time.Duration) endpoint {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("X-Backend", id)
		fmt.Fprintf(w, "%s %s", id, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	must(t, err)
	return endpoint{host, port}
}

// deadEndpoint is an address where nothing listens: connection refused.
func deadEndpoint(t *testing.T) endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return endpoint{host, port}
}

func (dp *dataPlane) testEWMA(t *testing.T) {
	fast := startSlowBackend(t, "fast", 0)
	slow := startSlowBackend(t, "slow", 80*time.Millisecond)
	dp.postBackends(backend{Name: "default-ewma-80", Endpoints: []endpoint{slow, fast}, LoadBalance: "ewma"})

	const requests = 40
	counts := map[string]int{}
	for i := range requests {
		r := dp.get(fmt.Sprintf("/e/%d", i), "default-ewma-80")
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		counts[r.backend]++
	}
	t.Logf("ewma: %v", counts)
	// Round robin would give 50%; each worker needs a sample of the slow
	// endpoint or two before it learns.
	if counts["fast"]*100 < requests*60 {
		t.Errorf("fast endpoint got %d of %d requests, want > 60%%", counts["fast"], requests)
	}

	// An endpoint change keeps the scores of the endpoints that stay: with
	// a new fast endpoint added, the known-slow one stays avoided.
	fast2 := startSlowBackend(t, "fast2", 0)
	dp.postBackends(backend{Name: "default-ewma-80", Endpoints: []endpoint{slow, fast, fast2}, LoadBalance: "ewma"})
	counts = map[string]int{}
	for i := range 20 {
		r := dp.get(fmt.Sprintf("/e2/%d", i), "default-ewma-80")
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		counts[r.backend]++
	}
	t.Logf("ewma after adding an endpoint: %v", counts)
	if counts["slow"] > 4 {
		t.Errorf("slow endpoint got %d of 20 after an endpoint change: scores lost? %v", counts["slow"], counts)
	}
}

// chashOwners asks for each path once per worker-ish (twice) and returns
// path -> backend id, failing if a path was answered by two endpoints.
func (dp *dataPlane) chashOwners(t *testing.T, name string, paths []string) map[string]string {
	t.Helper()
	owners := map[string]string{}
	for round := range 3 {
		for _, p := range paths {
			r := dp.get(p, name)
			if r.status != 200 {
				t.Fatalf("%s: %d %s", p, r.status, r.body)
			}
			if round == 0 {
				owners[p] = r.backend
			} else if owners[p] != r.backend {
				t.Fatalf("%s went to %s, then to %s", p, owners[p], r.backend)
			}
		}
	}
	return owners
}

func (dp *dataPlane) testCHash(t *testing.T) {
	eps, ids := startBackends(t, "ch", 4)
	hash := map[string]any{"upstream-hash-by": "$request_uri"}
	dp.postBackends(backend{Name: "default-ch-80", Endpoints: eps, UpstreamHashBy: hash})

	var paths []string
	for i := range 40 {
		paths = append(paths, fmt.Sprintf("/item/%d?x=%d", i, i*7))
	}
	owners := dp.chashOwners(t, "default-ch-80", paths)
	perEndpoint := map[string]int{}
	for _, id := range owners {
		perEndpoint[id]++
	}
	t.Logf("keys per endpoint: %v", perEndpoint)
	if len(perEndpoint) < 3 {
		t.Errorf("40 URIs landed on %d of 4 endpoints: %v", len(perEndpoint), perEndpoint)
	}

	// Remove the endpoint that owns the most keys: only its keys move.
	removed := ""
	for id, n := range perEndpoint {
		if removed == "" || n > perEndpoint[removed] {
			removed = id
		}
	}
	var rest []endpoint
	for i, id := range ids {
		if id != removed {
			rest = append(rest, eps[i])
		}
	}
	dp.postBackends(backend{Name: "default-ch-80", Endpoints: rest, UpstreamHashBy: hash})
	after := dp.chashOwners(t, "default-ch-80", paths)
	for _, p := range paths {
		switch {
		case owners[p] == removed && after[p] == removed:
			t.Errorf("%s still on the removed endpoint", p)
		case owners[p] != removed && after[p] != owners[p]:
			t.Errorf("%s moved from %s to %s though its endpoint stayed", p, owners[p], after[p])
		}
	}

	// A compound expression: $arg_user with literal text decides, the
	// path does not. Unsafe expressions are not interpreted at all.
	hash = map[string]any{"upstream-hash-by": "user-$arg_user"}
	dp.postBackends(backend{Name: "default-ch-80", Endpoints: eps, UpstreamHashBy: hash})
	for _, user := range []string{"alice", "bob", "carol"} {
		var paths []string
		for i := range 6 {
			paths = append(paths, fmt.Sprintf("/p%d?user=%s", i, user))
		}
		owners := dp.chashOwners(t, "default-ch-80", paths)
		distinct := map[string]bool{}
		for _, id := range owners {
			distinct[id] = true
		}
		if len(distinct) != 1 {
			t.Errorf("user %s spread over %v", user, distinct)
		}
	}
	dp.postBackends(backend{Name: "default-ch-80", Endpoints: eps, UpstreamHashBy: map[string]any{"upstream-hash-by": "${request_uri}"}})
	if r := dp.get("/x", "default-ch-80"); r.status != 200 {
		t.Errorf("invalid hash-by: status %d, want 200 from a random endpoint", r.status)
	}
	if !strings.Contains(dp.errorLog(), "unusable upstream-hash-by") {
		t.Errorf("invalid upstream-hash-by not reported")
	}
}

func (dp *dataPlane) testCHashSubset(t *testing.T) {
	eps, _ := startBackends(t, "sub", 6)
	dp.postBackends(backend{Name: "default-sub-80", Endpoints: eps, UpstreamHashBy: map[string]any{
		"upstream-hash-by": "$arg_user", "upstream-hash-by-subset": true, "upstream-hash-by-subset-size": 3,
	}})
	union := map[string]bool{}
	for u := range 20 {
		user := fmt.Sprintf("user%d", u)
		seen := map[string]bool{}
		for i := range 16 {
			r := dp.get(fmt.Sprintf("/s%d?user=%s", i, user), "default-sub-80")
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			seen[r.backend] = true
			union[r.backend] = true
		}
		// Random within a subset of 3: 16 requests reach more than one of
		// them (all on one: probability 3^-15), never more than three.
		if len(seen) < 2 || len(seen) > 3 {
			t.Errorf("user %s reached %d endpoints %v, want 2-3 of its subset", user, len(seen), seen)
		}
	}
	// Two subsets of 3 out of 6 endpoints: twenty users cover both (all
	// on one subset: probability 2^-19).
	if len(union) < 4 {
		t.Errorf("six users reached only %v", union)
	}
}
