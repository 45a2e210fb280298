package lua_test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of cookie session affinity in switchyard/affinity/ (sticky,
// balanced, persistent), run by TestDataPlane.

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
