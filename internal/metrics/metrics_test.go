package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestObserve: each kind of applier result moves the series an
// ingress-nginx dashboard reads, and readiness follows the first apply.
func TestObserve(t *testing.T) {
	c := New(Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"})
	h := c.Handler(func() error { return nil }, func() error { return nil })
	if code, _ := scrape(t, h, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz before any apply: %d", code)
	}
	now := time.Unix(1700000000, 0)
	for _, res := range []string{
		`{"generation":1,"dynamicUpdated":true,"configHash":11}`, // NGINX started
		`{"generation":2,"reloaded":true,"configHash":22}`,       // a reload
		`{"generation":3,"dynamicUpdated":true,"configHash":22}`, // endpoints only
	} {
		if err := c.Observe([]byte(res), now); err != nil {
			t.Fatal(err)
		}
	}
	if _, body := scrape(t, h, "/metrics"); !strings.Contains(body, `nginx_ingress_controller_config_hash{controller_class="nginx",controller_namespace="ns",controller_pod="p-1"} 22`) {
		t.Errorf("config_hash is not the running configuration's after a reload")
	}
	for _, res := range []string{
		`{"generation":4,"error":"reload nginx: refused","configHash":22}`, // a failed apply
	} {
		if err := c.Observe([]byte(res), now); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Observe([]byte("{"), now); err == nil {
		t.Fatal("a malformed result was accepted")
	}
	code, body := scrape(t, h, "/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	labels := `controller_class="nginx",controller_namespace="ns",controller_pod="p-1"`
	for _, want := range []string{
		`nginx_ingress_controller_success{` + labels + `} 1`,
		`nginx_ingress_controller_errors{` + labels + `} 1`,
		`nginx_ingress_controller_config_last_reload_successful{` + labels + `} 0`,
		`nginx_ingress_controller_config_hash{` + labels + `} 0`, // as ingress-nginx after a failed reload
		`nginx_ingress_controller_config_last_reload_successful_timestamp_seconds{` + labels + `} 1.7e+09`,
		`switchyard_applies_without_reload_total{` + labels + `} 2`,
		`switchyard_applied_generation{` + labels + `} 4`,
		`nginx_ingress_controller_build_info{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, _ := scrape(t, h, "/readyz"); code != 200 {
		t.Errorf("readyz after an apply: %d", code)
	}
	busDown := func() error { return errors.New("bus down") }
	down := c.Handler(busDown, busDown)
	if code, body := scrape(t, down, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "bus down") {
		t.Errorf("healthz with the bus down: %d %q", code, body)
	}
}
