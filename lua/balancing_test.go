package lua_test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of the balancing algorithms (ewma, chash, chashsubset, sticky),
// run by TestDataPlane against the real NGINX with two workers.

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
	for _, user := range []string{"alice", "bob", "carol", "dave", "erin", "frank"} {
		seen := map[string]bool{}
		for i := range 24 {
			r := dp.get(fmt.Sprintf("/s%d?user=%s", i, user), "default-sub-80")
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			seen[r.backend] = true
			union[r.backend] = true
		}
		// Random within a subset of 3: 24 requests reach more than one of
		// them (all on one: probability 3^-23), never more than three.
		if len(seen) < 2 || len(seen) > 3 {
			t.Errorf("user %s reached %d endpoints %v, want 2-3 of its subset", user, len(seen), seen)
		}
	}
	// Two subsets of 3 out of 6 endpoints: six users cover both (all on
	// one subset: probability 2^-5).
	if len(union) < 4 {
		t.Errorf("six users reached only %v", union)
	}
}

func findCookie(h http.Header, name string) *http.Cookie {
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err == nil && c.Name == name {
			return c
		}
	}
	return nil
}

func cookieLine(h http.Header, name string) string {
	for _, line := range h.Values("Set-Cookie") {
		if strings.HasPrefix(line, name+"=") {
			return line
		}
	}
	return ""
}

var hexValue = regexp.MustCompile(`^[0-9a-f]{32}$`)

func affinity(mode string, cookie map[string]any) map[string]any {
	return map[string]any{"name": "cookie", "mode": mode, "cookieSessionAffinity": cookie}
}

func (dp *dataPlane) testStickyCookie(t *testing.T) {
	eps, ids := startBackends(t, "st", 3)
	// Affinity wins over upstream-hash-by and load-balance, as in
	// ingress-nginx.
	b := backend{Name: "default-st-80", Endpoints: eps, LoadBalance: "ewma",
		UpstreamHashBy: map[string]any{"upstream-hash-by": "$request_uri"},
		SessionAffinity: affinity("balanced", map[string]any{
			"name": "route", "path": "/app", "domain": "example.test", "samesite": "Strict",
			"secure": true, "maxage": "3600", "expires": "7200",
		})}
	dp.postBackends(b)

	r, h := dp.getWith(t, "/app/x", "default-st-80", nil)
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	line := cookieLine(h, "route")
	c := findCookie(h, "route")
	if c == nil {
		t.Fatalf("no route cookie in %q", h.Values("Set-Cookie"))
	}
	t.Logf("Set-Cookie: %s", line)
	if !hexValue.MatchString(c.Value) || strings.Contains(c.Value, "127.0.0.1") {
		t.Errorf("cookie value %q is not an opaque hash", c.Value)
	}
	if c.Path != "/app" || c.Domain != "example.test" || !c.Secure || !c.HttpOnly ||
		c.SameSite != http.SameSiteStrictMode || c.MaxAge != 3600 {
		t.Errorf("cookie attributes: %+v", c)
	}
	if until := time.Until(c.Expires); until < 7100*time.Second || until > 7300*time.Second {
		t.Errorf("Expires %v is not about 7200 s ahead", c.Expires)
	}

	// The session sticks, on both workers.
	first := r.backend
	for i := range 12 {
		r, h := dp.getWith(t, fmt.Sprintf("/app/%d", i), "default-st-80", map[string]string{"Cookie": "route=" + c.Value})
		if r.status != 200 || r.backend != first {
			t.Fatalf("request %d with the cookie: %d from %s, want %s", i, r.status, r.backend, first)
		}
		if l := cookieLine(h, "route"); l != "" {
			t.Errorf("a known session got a new cookie: %s", l)
		}
	}
	// Without a cookie (or with a forged one), each request is a new
	// session spread over the endpoints.
	seen := map[string]bool{}
	for range 30 {
		r, h := dp.getWith(t, "/app/", "default-st-80", map[string]string{"Cookie": "route=127.0.0.1"})
		if findCookie(h, "route") == nil {
			t.Fatalf("new session without a cookie")
		}
		seen[r.backend] = true
	}
	if len(seen) < 2 {
		t.Errorf("new sessions all went to %v", seen)
	}

	// The endpoint of the session goes: the session moves and stays on
	// its new endpoint.
	var rest []endpoint
	for i, id := range ids {
		if id != first {
			rest = append(rest, eps[i])
		}
	}
	b.Endpoints = rest
	dp.postBackends(b)
	moved := ""
	for i := range 6 {
		r, _ := dp.getWith(t, "/app/", "default-st-80", map[string]string{"Cookie": "route=" + c.Value})
		if r.status != 200 || r.backend == first {
			t.Fatalf("after removing %s: %d from %s", first, r.status, r.backend)
		}
		if i == 0 {
			moved = r.backend
		} else if r.backend != moved {
			t.Errorf("re-homed session not sticky: %s then %s", moved, r.backend)
		}
	}

	// Invalid attributes that slipped past the controller are dropped,
	// never copied into the header; SameSite=None is left out for a user
	// agent known to mishandle it when conditional_samesite_none is set.
	b.SessionAffinity = affinity("balanced", map[string]any{
		"name": "bad name", "path": "/a;Domain=evil.test", "samesite": "None", "conditional_samesite_none": true,
	})
	dp.postBackends(b)
	_, h = dp.getWith(t, "/", "default-st-80", map[string]string{"User-Agent": "Mozilla/5.0 Chrome/120.0.0.0 Safari/537.36"})
	line = cookieLine(h, "INGRESSCOOKIE")
	if line == "" || strings.Contains(line, "evil") || !strings.Contains(line, "; Path=/;") || !strings.Contains(line, "SameSite=None") {
		t.Errorf("with invalid name and path: Set-Cookie %q", h.Values("Set-Cookie"))
	}
	_, h = dp.getWith(t, "/", "default-st-80", map[string]string{"User-Agent": "Mozilla/5.0 (X11) AppleWebKit/537.36 Chrome/60.0.3112.90 Safari/537.36"})
	if line := cookieLine(h, "INGRESSCOOKIE"); line == "" || strings.Contains(line, "SameSite") {
		t.Errorf("Chrome 60 got %q, want no SameSite", line)
	}
}

// sessions opens n sessions and returns their cookie values by endpoint.
func (dp *dataPlane) sessions(t *testing.T, name string, n int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for range n {
		r, h := dp.getWith(t, "/", name, nil)
		c := findCookie(h, "INGRESSCOOKIE")
		if r.status != 200 || c == nil {
			t.Fatalf("new session: %d, cookie %v", r.status, c)
		}
		out[c.Value] = r.backend
	}
	return out
}

func (dp *dataPlane) testStickyModes(t *testing.T) {
	eps, _ := startBackends(t, "mode", 4)
	for _, mode := range []string{"persistent", "balanced"} {
		name := "default-mode-" + mode
		b := backend{Name: name, Endpoints: eps[:2], SessionAffinity: affinity(mode, map[string]any{})}
		dp.postBackends(b)
		sessions := dp.sessions(t, name, 24)
		// Scale up from 2 to 4 endpoints.
		b.Endpoints = eps
		dp.postBackends(b)
		movedCount := 0
		for value, was := range sessions {
			r, h := dp.getWith(t, "/", name, map[string]string{"Cookie": "INGRESSCOOKIE=" + value})
			if r.status != 200 {
				t.Fatalf("%s: status %d", mode, r.status)
			}
			if r.backend != was {
				movedCount++
			}
			if findCookie(h, "INGRESSCOOKIE") != nil {
				t.Errorf("%s: a session whose endpoint exists got a new cookie", mode)
			}
		}
		t.Logf("%s: %d of %d sessions moved on scale-up", mode, movedCount, len(sessions))
		switch mode {
		case "persistent":
			if movedCount != 0 {
				t.Errorf("persistent: %d sessions moved though their endpoints stayed", movedCount)
			}
		case "balanced":
			// The ring gives the two new endpoints about half of the keys.
			if movedCount == 0 || movedCount == len(sessions) {
				t.Errorf("balanced: %d of %d sessions moved, want some but not all", movedCount, len(sessions))
			}
		}
	}

	// Persistent: the cookie is the salted MD5 of the endpoint, and a
	// session on a removed endpoint gets a new endpoint and a new cookie.
	name := "default-mode-persistent"
	b := backend{Name: name, Endpoints: eps[:2], SessionAffinity: affinity("persistent", map[string]any{})}
	dp.postBackends(b)
	value := md5hex(name + "|" + eps[0].Address + ":" + eps[0].Port)
	r, _ := dp.getWith(t, "/", name, map[string]string{"Cookie": "INGRESSCOOKIE=" + value})
	if r.backend != "mode-0" {
		t.Fatalf("cookie of mode-0 went to %s", r.backend)
	}
	b.Endpoints = eps[1:3]
	dp.postBackends(b)
	r, h := dp.getWith(t, "/", name, map[string]string{"Cookie": "INGRESSCOOKIE=" + value})
	c := findCookie(h, "INGRESSCOOKIE")
	if r.status != 200 || c == nil || c.Value == value {
		t.Fatalf("session of a removed endpoint: %d from %s, cookie %v", r.status, r.backend, c)
	}
	idx := slices.Index([]string{"mode-0", "mode-1", "mode-2", "mode-3"}, r.backend)
	if idx < 0 || c.Value != md5hex(name+"|"+eps[idx].Address+":"+eps[idx].Port) {
		t.Errorf("new cookie %q does not name %s", c.Value, r.backend)
	}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (dp *dataPlane) testStickyChangeOnFailure(t *testing.T) {
	eps, ids := startBackends(t, "cof", 1)
	dead := deadEndpoint(t)
	for _, change := range []bool{true, false} {
		name := fmt.Sprintf("default-cof-%t", change)
		dp.postBackends(backend{Name: name, Endpoints: []endpoint{dead, eps[0]},
			SessionAffinity: affinity("persistent", map[string]any{"change_on_failure": change})})
		deadCookie := md5hex(name + "|" + dead.Address + ":" + dead.Port)
		r, h := dp.getWith(t, "/", name, map[string]string{"Cookie": "INGRESSCOOKIE=" + deadCookie})
		c := findCookie(h, "INGRESSCOOKIE")
		if change {
			// Retried on the live endpoint, and the session now lives there.
			want := md5hex(name + "|" + eps[0].Address + ":" + eps[0].Port)
			if r.status != 200 || r.backend != ids[0] || c == nil || c.Value != want {
				t.Errorf("change_on_failure: %d from %q, cookie %v (want %s)", r.status, r.backend, c, want)
			}
		} else if r.status != 502 || c != nil {
			// ingress-nginx's behaviour: the session stays on its endpoint.
			t.Errorf("without change_on_failure: %d, cookie %v; want 502 and no new cookie", r.status, c)
		}
	}
}
