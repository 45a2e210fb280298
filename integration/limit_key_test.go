package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// keyedIngressYAML limits keyed.example.com to 1 request a minute with a
// burst of 1: two pass, the third is refused, and none comes back during a
// test.
func keyedIngressYAML() string {
	return limitedIngressYAML("default", "keyed", "keyed.example.com",
		map[string]string{"limit-rpm": "1", "limit-burst-multiplier": "1"}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
}

// TestLimitConnZoneVariableThroughNginx: limit-conn-zone-variable keys the
// rate limit zones. Counted by a request header, each client value has its
// own budget and a request without the header is not counted; back to the
// default (the client address), NGINX reloads with new zones and every
// request from loopback shares one budget.
func TestLimitConnZoneVariableThroughNginx(t *testing.T) {
	e := startWithConfigMap(t, map[string]string{"ing.yaml": keyedIngressYAML()},
		map[string]string{"limit-conn-zone-variable": "$http_x_client_id"})
	e.eventually("keyed.example.com", "/", "the limited Ingress", servedBy("a-1"))

	statusFor := func(client string) int {
		t.Helper()
		headers := map[string]string{}
		if client != "" {
			headers["X-Client-Id"] = client
		}
		r, err := e.tryWith("keyed.example.com", "/", headers)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	refusedWithin := func(client string, n int) bool {
		for range n {
			if statusFor(client) == 503 {
				return true
			}
		}
		return false
	}
	if !refusedWithin("alice", 5) {
		t.Fatal("client alice was never refused: the zone does not count by X-Client-Id")
	}
	if st := statusFor("bob"); st != 200 {
		t.Errorf("client bob got %d after alice's budget ran out, want 200 (a budget of its own)", st)
	}
	for i := range 4 {
		if st := statusFor(""); st != 200 {
			t.Fatalf("request %d without X-Client-Id got %d: an empty key is not counted", i, st)
		}
	}

	e.write("config.yaml", configMapYAML(nil))
	harness.WaitFor(t, changeTimeout, "requests without X-Client-Id limited by the client address", func() error {
		if statusFor("") != 503 {
			return fmt.Errorf("not refused yet")
		}
		return nil
	})
}

// TestLimitConnZoneVariableNginxRefuses: a variable NGINX does not know is
// traced to limit-conn-zone-variable, not to the Ingress with the limit:
// the key falls back to the client address and the Ingress stays served,
// limited.
func TestLimitConnZoneVariableNginxRefuses(t *testing.T) {
	e := startWithConfigMap(t, map[string]string{"ing.yaml": keyedIngressYAML()},
		map[string]string{"limit-conn-zone-variable": "$no_such_limit_var"})

	waitRefusalLogged(t, e.sy, "configmap limit-conn-zone-variable", `unknown "no_such_limit_var" variable`)
	live, err := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(live), "# refused configmap limit-conn-zone-variable rev=") || strings.Contains(string(live), "no_such_limit_var") {
		t.Errorf("the running nginx.conf still has the variable, or no refusal line")
	}
	served := false
	harness.WaitFor(t, changeTimeout, "the Ingress served, then limited by the client address", func() error {
		r, err := e.tryWith("keyed.example.com", "/", nil)
		if err != nil {
			return err
		}
		served = served || servedBy("a-1")(r)
		if !served || r.Status != 503 {
			return fmt.Errorf("served %v, status %d", served, r.Status)
		}
		return nil
	})
}
