package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// balanceHost is served by echo-c, a Service of three pods.
const balanceHost = "balance.example.com"

func balanceYAML(annotations map[string]string) string {
	full := map[string]string{}
	for k, v := range annotations {
		full["nginx.ingress.kubernetes.io/"+k] = v
	}
	return harness.AnnotatedIngressYAML("default", "balance", balanceHost, full,
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-c"})
}

// newBalanceEnv starts three echo pods behind echo-c and an Ingress for
// them with the given annotations.
func newBalanceEnv(t *testing.T, annotations map[string]string) *env {
	t.Helper()
	bin := harness.Binary(t)
	var ports []int
	for i := range 3 {
		ports = append(ports, harness.StartEcho(t, bin, "echo-c", fmt.Sprintf("c-%d", i+1)))
	}
	return newEnv(t, map[string]string{
		"echo-c.yaml":  harness.ServiceYAML("default", "echo-c", ports...),
		"balance.yaml": balanceYAML(annotations),
	})
}

// podOf sends one request and returns the pod that answered and the
// response.
func (e *env) podOf(path string, headers map[string]string) (string, harness.Response) {
	e.t.Helper()
	r := e.getWith(balanceHost, path, headers)
	if r.Status != http.StatusOK || r.Echo == nil {
		e.t.Fatalf("%s%s: %d %s", balanceHost, path, r.Status, truncate(r.Body))
	}
	return r.Echo.Pod, r
}

// sessionCookie returns the value of the cookie name that r sets.
func sessionCookie(r harness.Response, name string) (string, bool) {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == name {
			return c.Value, true
		}
	}
	return "", false
}

// hashedPods maps each of a few URIs to the one pod that answers it,
// failing if a URI is answered by two pods.
func (e *env) hashedPods() map[string]string {
	e.t.Helper()
	pods := map[string]string{}
	for i := range 12 {
		path := fmt.Sprintf("/item/%d?x=%d", i, i*7)
		for range 5 {
			pod, _ := e.podOf(path, nil)
			if prev, ok := pods[path]; ok && prev != pod {
				e.t.Fatalf("upstream-hash-by $request_uri: %s answered by %s and %s", path, prev, pod)
			}
			pods[path] = pod
		}
	}
	return pods
}

func TestBalancingThroughNginx(t *testing.T) {
	e := newBalanceEnv(t, map[string]string{"upstream-hash-by": "$request_uri"})
	e.eventually(balanceHost, "/", "echo-c served", func(r harness.Response) bool {
		return r.Status == 200 && r.Echo != nil && strings.HasPrefix(r.Echo.Pod, "c-")
	})

	// Consistent hashing: each URI always hits the same pod, and the URIs
	// spread over more than one pod (12 URIs on one of 3 pods by chance:
	// 3^-11).
	pods := e.hashedPods()
	used := map[string]bool{}
	for _, p := range pods {
		used[p] = true
	}
	if len(used) < 2 {
		t.Fatalf("12 URIs all hashed to %v: hashing on a constant?", pods)
	}
	workers := e.sy.WorkerPIDs(t)

	// Cookie affinity: the first answer sets INGRESSCOOKIE; with it,
	// every request goes to the same pod. Applied without a reload.
	e.write("balance.yaml", balanceYAML(map[string]string{"affinity": "cookie", "session-cookie-max-age": "300"}))
	var cookie string
	harness.WaitFor(t, changeTimeout, "Set-Cookie INGRESSCOOKIE", func() error {
		_, r := e.podOf("/", nil)
		v, ok := sessionCookie(r, "INGRESSCOOKIE")
		if !ok {
			return fmt.Errorf("no INGRESSCOOKIE in %q", r.Header.Values("Set-Cookie"))
		}
		if sc := r.Header.Get("Set-Cookie"); !strings.Contains(sc, "Max-Age=300") || !strings.Contains(sc, "Path=/") {
			return fmt.Errorf("Set-Cookie %q: want Max-Age=300 and Path=/", sc)
		}
		cookie = v
		return nil
	})
	sticky := map[string]string{"Cookie": "INGRESSCOOKIE=" + cookie}
	first, _ := e.podOf("/", sticky)
	for i := range 20 {
		pod, r := e.podOf(fmt.Sprintf("/page/%d", i), sticky)
		if pod != first {
			t.Fatalf("request %d with the session cookie went to %s, not %s", i, pod, first)
		}
		if _, set := sessionCookie(r, "INGRESSCOOKIE"); set {
			t.Fatalf("request %d with a valid session cookie got a new one: %q", i, r.Header.Values("Set-Cookie"))
		}
	}
	// Without the cookie, new sessions are spread (balanced mode): over 30
	// new sessions, more than one pod.
	fresh := map[string]bool{}
	for range 30 {
		pod, _ := e.podOf("/", nil)
		fresh[pod] = true
	}
	if len(fresh) < 2 {
		t.Fatalf("30 new sessions all went to %v", fresh)
	}

	// ewma: accepted and served; the session cookie is gone.
	e.write("balance.yaml", balanceYAML(map[string]string{"load-balance": "ewma"}))
	harness.WaitFor(t, changeTimeout, "ewma without the session cookie", func() error {
		_, r := e.podOf("/", nil)
		if _, ok := sessionCookie(r, "INGRESSCOOKIE"); ok {
			return fmt.Errorf("still sets %q", r.Header.Values("Set-Cookie"))
		}
		return nil
	})
	for i := range 20 {
		e.podOf(fmt.Sprintf("/ewma/%d", i), sticky) // fails on anything but 200 from echo-c
	}

	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("NGINX reloaded on a balancing change: workers %v, then %v", workers, after)
	}
}

// An invalid balancing annotation rejects the Ingress (its routes are not
// served); upstream-hash-by is High risk and refused below it.
func TestBalancingRefused(t *testing.T) {
	e := newBalanceEnv(t, map[string]string{"affinity": "cookie", "session-cookie-path": "/a;Domain=evil.example"})
	e.write("ok.yaml", harness.IngressYAML("default", "ok", "ok.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.eventually("ok.example.com", "/", "the valid Ingress", servedBy("a-1"))
	e.expect(balanceHost, "/", 404, "")

	e.write("balance.yaml", balanceYAML(map[string]string{"affinity": "cookie", "session-cookie-path": "/a"}))
	e.eventually(balanceHost, "/a", "the fixed Ingress", func(r harness.Response) bool {
		_, ok := sessionCookie(r, "INGRESSCOOKIE")
		return r.Status == 200 && ok && strings.Contains(r.Header.Get("Set-Cookie"), "Path=/a")
	})
}
