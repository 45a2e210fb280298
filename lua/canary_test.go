package lua_test

import (
	"strings"
	"testing"
)

// Tests of the canary split in switchyard/balancer.lua (by header, cookie
// and weight), run by TestDataPlane.

// testCanary posts a primary with a canary alternative and checks the
// routing order of ingress-nginx's balancer: header, cookie, weight.
func (dp *dataPlane) testCanary(t *testing.T) {
	primaryEps, _ := startBackends(t, "stable", 1)
	canaryEps, _ := startBackends(t, "canary", 1)
	post := func(policy map[string]any) {
		dp.postBackends(
			backend{Name: "default-stable-80", Service: svc("stable"), Endpoints: primaryEps, AlternativeBackends: []string{"default-canary-80"}},
			backend{Name: "default-canary-80", Service: svc("canary"), Endpoints: canaryEps, TrafficShapingPolicy: policy})
	}
	expect := func(what string, headers map[string]string, wantBackend string) {
		t.Helper()
		// Several requests: both workers, and weight 0/100 never flips.
		for range 6 {
			r, _ := dp.getWith(t, "/c", "default-stable-80", headers)
			if r.status != 200 || r.backend != wantBackend {
				t.Fatalf("%s: got %d from %q (%s), want %s", what, r.status, r.backend, r.body, wantBackend)
			}
			wantAlt := ""
			if wantBackend == "canary-0" {
				wantAlt = "default-canary-80"
			}
			if r.alternative != wantAlt {
				t.Fatalf("%s: $proxy_alternative_upstream_name %q, want %q", what, r.alternative, wantAlt)
			}
		}
	}

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "cookie": "canary"})
	expect("no header, weight 0", nil, "stable-0")
	expect("header always", map[string]string{"X-Canary": "always"}, "canary-0")
	expect("header never", map[string]string{"X-Canary": "never"}, "stable-0")
	expect("other header value falls through", map[string]string{"X-Canary": "maybe"}, "stable-0")
	expect("cookie always", map[string]string{"Cookie": "a=b; canary=always"}, "canary-0")
	expect("header never beats cookie always", map[string]string{"X-Canary": "never", "Cookie": "canary=always"}, "stable-0")

	post(map[string]any{"weight": 100, "weightTotal": 100, "header": "X-Canary", "cookie": "canary"})
	expect("weight 100", nil, "canary-0")
	expect("cookie never beats weight 100", map[string]string{"Cookie": "canary=never"}, "stable-0")
	expect("header never beats weight 100", map[string]string{"X-Canary": "never"}, "stable-0")

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "headerValue": "v2"})
	expect("header value match", map[string]string{"X-Canary": "v2"}, "canary-0")
	expect("header value mismatch", map[string]string{"X-Canary": "always"}, "stable-0")

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "headerPattern": "^(beta|gamma)-[0-9]+$"})
	expect("header pattern match", map[string]string{"X-Canary": "gamma-12"}, "canary-0")
	expect("header pattern mismatch", map[string]string{"X-Canary": "delta-12"}, "stable-0")

	// weight 1 of 4: about a quarter of 400 requests.
	post(map[string]any{"weight": 1, "weightTotal": 4})
	canary := 0
	for range 400 {
		if r, _ := dp.getWith(t, "/c", "default-stable-80", nil); r.backend == "canary-0" {
			canary++
		}
	}
	if canary < 50 || canary > 150 {
		t.Errorf("weight 1/4: %d of 400 requests went to the canary", canary)
	}

	// A primary whose alternative does not exist is served alone.
	dp.postBackends(backend{Name: "default-stable-80", Service: svc("stable"), Endpoints: primaryEps, AlternativeBackends: []string{"gone"}})
	expect("missing alternative", map[string]string{"X-Canary": "always"}, "stable-0")
	if !strings.Contains(dp.errorLog(), `no alternative backend named "gone"`) {
		t.Errorf("a missing alternative backend is not logged")
	}
}

func (dp *dataPlane) testInvalidCanary(t *testing.T) {
	for _, body := range []string{
		`[{"name":"a","endpoints":[],"alternativeBackends":"b"}]`,
		`[{"name":"a","endpoints":[],"alternativeBackends":[1]}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":[1]}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":-1}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1.5}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1,"weightTotal":0}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1,"header":7}}]`,
	} {
		if status, text := dp.configRequest("POST", "/configuration/backends", body); status != 400 {
			t.Errorf("POST %s: %d %s, want 400", body, status, text)
		}
	}
}
