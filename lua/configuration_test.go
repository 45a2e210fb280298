package lua_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Tests of switchyard/configuration.lua (the control endpoint) and the
// snapshot it publishes (switchyard/util/snapshot.lua), run by
// TestDataPlane (dataplane_test.go).

func (dp *dataPlane) testHealthz(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/", 404},
		{"GET", "/configuration", 404},
		{"GET", "/configuration/unknown", 404},
		{"DELETE", "/configuration/backends", 405},
		{"GET", "/configuration/certificates", 405},
	}
	for _, tt := range tests {
		if status, body := dp.configRequest(tt.method, tt.path, ""); status != tt.status {
			t.Errorf("%s %s = %d %q, want %d", tt.method, tt.path, status, body, tt.status)
		}
	}
}

// A request that arrives after NGINX started but before the controller
// posted anything waits for the backends instead of getting a 503.
func (dp *dataPlane) testFirstConfigurationWait(t *testing.T) {
	eps, ids := startBackends(t, "first", 1)
	posted := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		body, _ := json.Marshal([]backend{{Name: "first", Service: svc("first"), Endpoints: eps}})
		status, text := dp.configRequest("POST", "/configuration/backends", string(body))
		if status != 201 {
			t.Errorf("POST backends: %d %s", status, text)
		}
		posted <- time.Now()
	}()
	start := time.Now()
	r := dp.get("/", "first")
	answered := time.Now()
	if r.status != 200 || r.backend != ids[0] {
		t.Fatalf("got %d from %q, want 200 from %s", r.status, r.backend, ids[0])
	}
	if at := <-posted; answered.Before(at.Add(-50*time.Millisecond)) || answered.Sub(start) < 250*time.Millisecond {
		t.Fatalf("answered after %s, before the configuration arrived", answered.Sub(start))
	}
}

func (dp *dataPlane) testInvalidBackends(t *testing.T) {
	eps, ids := startBackends(t, "keep", 1)
	good, _ := json.Marshal([]backend{{Name: "default-keep-80", Service: svc("keep"), Endpoints: eps}})
	if status, text := dp.configRequest("POST", "/configuration/backends", string(good)); status != 201 {
		t.Fatalf("POST: %d %s", status, text)
	}

	tests := []struct {
		name, body, reason string
	}{
		{"empty body", "", "empty body"},
		{"not JSON", "[{", "invalid JSON"},
		{"object", `{"name":"x"}`, "array"},
		{"empty object", `{}`, "array"},
		{"item not object", `[1]`, "must be an object"},
		{"missing name", `[{"endpoints":[]}]`, "name"},
		{"numeric name", `[{"name":1,"endpoints":[]}]`, "name"},
		{"missing endpoints", `[{"name":"a"}]`, "endpoints"},
		{"endpoints object", `[{"name":"a","endpoints":{"address":"1.2.3.4"}}]`, "endpoints"},
		{"numeric port", `[{"name":"a","endpoints":[{"address":"1.2.3.4","port":80}]}]`, "port"},
		{"bad port", `[{"name":"a","endpoints":[{"address":"1.2.3.4","port":"http"}]}]`, "port"},
		{"missing address", `[{"name":"a","endpoints":[{"port":"80"}]}]`, "address"},
		{"duplicate names", `[{"name":"a","endpoints":[]},{"name":"a","endpoints":[]}]`, "duplicate"},
		{"numeric load-balance", `[{"name":"a","endpoints":[],"load-balance":1}]`, "load-balance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.configRequest("POST", "/configuration/backends", tt.body)
			if status != 400 || !strings.Contains(text, tt.reason) {
				t.Errorf("POST %s = %d %q, want 400 mentioning %q", tt.body, status, text, tt.reason)
			}
		})
	}

	if status, text := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || !sameJSON(text, string(good)) {
		t.Errorf("GET after rejected POSTs = %d %q, want %q", status, text, good)
	}
	if r := dp.get("/", "default-keep-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("previous backends stopped working: %d %q", r.status, r.backend)
	}
}

// sameJSON says whether a and b are the same JSON value: GET answers the
// stored backends as Lua encoded them again, sorted by name, with keys in
// another order and "/" escaped.
func sameJSON(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

// bigBackends builds a backends list of about size bytes whose last backend
// points at eps.
func bigBackends(t *testing.T, size int, eps []endpoint) ([]byte, string) {
	var list []backend
	for i, total := 0, 0; total < size; i++ {
		b := backend{
			Name:      fmt.Sprintf("bulk-namespace-%06d-service-80", i),
			Service:   map[string]string{"namespace": "bulk-namespace", "name": fmt.Sprintf("service-%06d", i), "port": "80"},
			Endpoints: []endpoint{{"10.1.2.3", "8080"}, {"10.1.2.4", "8080"}},
		}
		item, err := json.Marshal(b)
		must(t, err)
		total += len(item) + 1
		list = append(list, b)
	}
	list[len(list)-1].Endpoints = eps
	body, err := json.Marshal(list)
	must(t, err)
	return body, list[len(list)-1].Name
}

func (dp *dataPlane) testLargeBody(t *testing.T) {
	eps, ids := startBackends(t, "big", 1)
	body, last := bigBackends(t, 1200*1024, eps) // far above client_body_buffer_size
	status, text := dp.configRequest("POST", "/configuration/backends", string(body))
	if status != 201 {
		t.Fatalf("POST %d bytes: %d %s", len(body), status, text)
	}
	if status, got := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || !sameJSON(got, string(body)) {
		t.Errorf("GET returned %d, %d bytes, want the %d posted bytes", status, len(got), len(body))
	}
	if r := dp.get("/", last); r.status != 200 || r.backend != ids[0] {
		t.Errorf("last backend of the big list: %d %q", r.status, r.backend)
	}
}

func (dp *dataPlane) testBackendsDictFull(t *testing.T) {
	eps, ids := startBackends(t, "full", 1)
	dp.postBackends(backend{Name: "default-full-80", Endpoints: eps})
	_, before := dp.configRequest("GET", "/configuration/backends", "")

	body, _ := bigBackends(t, 5*1024*1024, eps) // the test dict has 4m
	status, text := dp.configRequest("POST", "/configuration/backends", string(body))
	if status != 507 {
		t.Fatalf("POST %d bytes into a 4m dict: %d %q, want 507", len(body), status, text)
	}
	if status, after := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || after != before {
		t.Errorf("GET after 507 = %d (%d bytes), want the previous %d bytes", status, len(after), len(before))
	}
	if r := dp.get("/", "default-full-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("previous backends after 507: %d %q", r.status, r.backend)
	}
	// And the dict is usable again afterwards.
	dp.postBackends(backend{Name: "default-full-80", Endpoints: eps})
}

func (dp *dataPlane) testConfigNotProxied(t *testing.T) {
	eps, ids := startBackends(t, "app", 1)
	dp.postBackends(backend{Name: "default-app-80", Endpoints: eps})
	_, stored := dp.configRequest("GET", "/configuration/backends", "")

	// With a backend, the path is proxied to the application.
	r := dp.get("/configuration/backends", "default-app-80")
	if r.status != 200 || r.backend != ids[0] || r.body != ids[0]+" /configuration/backends" {
		t.Errorf("GET /configuration/backends via proxy: %d %q %q", r.status, r.backend, r.body)
	}
	// Without one it is a 503, not the configuration endpoint.
	for _, path := range []string{"/configuration/backends", "/healthz"} {
		if r := dp.get(path, ""); r.status != 503 || strings.Contains(r.body, "default-app-80") || r.body == "ok" {
			t.Errorf("GET %s via proxy without backend: %d %q", path, r.status, r.body)
		}
	}
	// A POST through the proxy must not change the configuration.
	req, _ := http.NewRequest("POST", "http://"+dp.httpAddr+"/configuration/backends", strings.NewReader("[]"))
	resp, err := dp.proxy.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode == 201 {
		t.Errorf("POST via proxy answered 201")
	}
	if _, now := dp.configRequest("GET", "/configuration/backends", ""); now != stored {
		t.Errorf("configuration changed by a request through the proxy")
	}
}
