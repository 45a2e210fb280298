package integration

import (
	"bufio"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrapeMetrics reads /metrics at addr.
func scrapeMetrics(addr string) ([]metricSample, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("/metrics: %d %v", resp.StatusCode, err)
	}
	var out []metricSample
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := metricSample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out, nil
}

// findSample is the value of the sample named name whose labels include want.
func findSample(samples []metricSample, name string, want map[string]string) (float64, bool) {
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// TestRequestMetricsThroughNginx: requests through the real NGINX are
// counted in its shared dict and exported on --metrics-addr with
// ingress-nginx's labels: N GETs of a known Ingress are N requests and N
// observations of every histogram; a request no Ingress matches has the
// catch-all's empty labels; a canary's are the primary's with canary set;
// and every series ingress-nginx's Grafana
// dashboards query is there.
func TestRequestMetricsThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", harness.IngressYAML("default", "shop", "shop.example.com",
		harness.Path{Path: "/shop", Type: "Prefix", Service: "echo-a"}))
	e.write("canary.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop-canary
  namespace: default
  annotations: {nginx.ingress.kubernetes.io/canary: "true", nginx.ingress.kubernetes.io/canary-by-header: X-Canary}
spec:
  ingressClassName: switchyard
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /shop, pathType: Prefix, backend: {service: {name: echo-b, port: {name: http}}}}
`)
	e.write("wild.yaml", harness.IngressYAML("default", "wild", "*.wild.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.write("regex.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: api
  namespace: default
  annotations: {nginx.ingress.kubernetes.io/use-regex: "true"}
spec:
  ingressClassName: switchyard
  rules:
  - host: api.example.com
    http:
      paths:
      - {path: "/v[0-9]+/items$", pathType: ImplementationSpecific, backend: {service: {name: echo-b, port: {name: http}}}}
`)
	// A host served with its own certificate: its NotAfter is exported.
	certPEM, keyPEM := harness.SelfSigned(t, "secure.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-a", certPEM, keyPEM))
	// An Ingress whose Service does not exist is an orphan.
	e.write("orphan.yaml", harness.IngressYAML("default", "orphan", "orphan.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "no-such-service"}))
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	// Bucket flags as in ingress-nginx: the durations in three buckets.
	e.sy = harness.StartSwitchyard(t, e.dir, "--metrics-addr", addr, "--time-buckets", "0.1,1,10")
	client := harness.NewClient()
	url := "http://" + e.sy.HTTPAddr
	// Waiting with HEAD keeps the GET series to the requests counted below.
	harness.WaitFor(t, changeTimeout, "the Ingress served", func() error {
		r, err := harness.DoWithHeaders(client, http.MethodHead, url+"/shop/", "shop.example.com", nil)
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("HEAD: %d", r.Status)
		}
		return err
	})
	const n = 7
	for i := range n {
		r, err := harness.DoWithHeaders(client, http.MethodGet, fmt.Sprintf("%s/shop/item/%d?q=%d", url, i, i), "shop.example.com", nil)
		if err != nil || r.Status != 200 {
			t.Fatalf("GET %d: %v %d", i, err, r.Status)
		}
	}
	if r, err := harness.DoWithHeaders(client, http.MethodGet, url+"/", "nobody.example.com", nil); err != nil || r.Status != 404 {
		t.Fatalf("GET of an unknown host: %v %d", err, r.Status)
	}
	// The canary's requests: the primary's labels, and canary names the
	// canary's backend.
	for range 2 {
		r, err := harness.DoWithHeaders(client, http.MethodGet, url+"/shop/c", "shop.example.com", map[string]string{"X-Canary": "always"})
		if err != nil || r.Status != 200 || r.Echo == nil || r.Echo.Pod != "b-1" {
			t.Fatalf("GET of the canary: %v %d", err, r.Status)
		}
	}
	// A wildcard host is one value, the rule's; a regex path's "$" is kept.
	for _, host := range []string{"a.wild.example.com", "b.wild.example.com"} {
		if r, err := harness.DoWithHeaders(client, http.MethodGet, url+"/x", host, nil); err != nil || r.Status != 200 {
			t.Fatalf("GET %s: %v %d", host, err, r.Status)
		}
	}
	if r, err := harness.DoWithHeaders(client, http.MethodGet, url+"/v2/items", "api.example.com", nil); err != nil || r.Status != 200 {
		t.Fatalf("GET of the regex path: %v %d", err, r.Status)
	}

	shop := map[string]string{"namespace": "default", "ingress": "shop", "service": "echo-a", "status": "200",
		"method": "GET", "path": "/shop", "canary": "", "host": "shop.example.com",
		"controller_class": "switchyard", "controller_namespace": "default", "controller_pod": ""}
	catchAll := map[string]string{"namespace": "", "ingress": "", "service": "", "path": "", "status": "404", "host": "_"}
	var samples []metricSample
	// The log phase runs after the answer went out: poll.
	harness.WaitFor(t, changeTimeout, fmt.Sprintf("%d requests of Ingress shop in /metrics", n), func() error {
		var err error
		if samples, err = scrapeMetrics(addr); err != nil {
			return err
		}
		if v, _ := findSample(samples, "nginx_ingress_controller_requests", shop); v != n {
			return fmt.Errorf("requests = %v", v)
		}
		if _, ok := findSample(samples, "nginx_ingress_controller_requests", catchAll); !ok {
			return fmt.Errorf("no series of the catch-all")
		}
		canary := withLabels(shop, map[string]string{"canary": "default-echo-b-http"})
		if v, _ := findSample(samples, "nginx_ingress_controller_requests", canary); v != 2 {
			return fmt.Errorf("canary requests = %v", v)
		}
		wild := map[string]string{"ingress": "wild", "service": "echo-b", "path": "/", "host": "*.wild.example.com"}
		if v, _ := findSample(samples, "nginx_ingress_controller_requests", wild); v != 2 {
			return fmt.Errorf("wildcard host requests = %v", v)
		}
		regex := map[string]string{"ingress": "api", "path": "/v[0-9]+/items$", "host": "api.example.com", "status": "200"}
		if v, _ := findSample(samples, "nginx_ingress_controller_requests", regex); v != 1 {
			return fmt.Errorf("regex path requests = %v", v)
		}
		return nil
	})
	for _, h := range []string{"request_duration_seconds", "connect_duration_seconds", "header_duration_seconds",
		"response_duration_seconds", "request_size", "response_size", "bytes_sent"} {
		name := "nginx_ingress_controller_" + h + "_count"
		if v, ok := findSample(samples, name, shop); v != n {
			t.Errorf("%s = %v (found %v), want %d", name, v, ok, n)
		}
	}
	// Sensible values: n requests of a few hundred bytes each way.
	for _, name := range []string{"request_size_sum", "response_size_sum", "bytes_sent_sum"} {
		if v, _ := findSample(samples, "nginx_ingress_controller_"+name, shop); v < n*50 || v > n*100000 {
			t.Errorf("%s = %v for %d small requests", name, v, n)
		}
	}
	if v, _ := findSample(samples, "nginx_ingress_controller_request_duration_seconds_bucket", withLabels(shop, map[string]string{"le": "+Inf"})); v != n {
		t.Errorf("request_duration_seconds_bucket{le=\"+Inf\"} = %v, want %d", v, n)
	}
	for le, want := range map[string]bool{"0.1": true, "1": true, "10": true, "0.005": false, "2.5": false} {
		if _, ok := findSample(samples, "nginx_ingress_controller_request_duration_seconds_bucket", withLabels(shop, map[string]string{"le": le})); ok != want {
			t.Errorf("--time-buckets 0.1,1,10: bucket le=%s exported: %v", le, ok)
		}
	}
	if _, ok := findSample(samples, "nginx_ingress_controller_request_size_bucket", withLabels(shop, map[string]string{"le": "50"})); !ok {
		t.Error("request_size lacks ingress-nginx's default length bucket 50")
	}
	// NGINX's own: a master and its workers, and at least our requests.
	for name, least := range map[string]float64{"nginx_process_num_procs": 2, "nginx_process_resident_memory_bytes": 1 << 20,
		"nginx_process_requests_total": n + 1, "nginx_process_connections_total": n + 1, "nginx_process_oldest_start_time_seconds": 1} {
		if v, _ := findSample(samples, "nginx_ingress_controller_"+name, nil); v < least {
			t.Errorf("%s = %v, want at least %v", name, v, least)
		}
	}
	for _, s := range samples {
		for k, v := range s.labels {
			if strings.Contains(v, "/item/") || strings.Contains(v, "q=") || (k == "host" && v == "nobody.example.com") {
				t.Errorf("%s has the request's URI or host in %s=%q", s.name, k, v)
			}
		}
	}
	checkGrafanaMetrics(t, samples)
	checkControllerMetrics(t, samples, certPEM)
	checkPipelineMetrics(t, samples)

	// A deleted Ingress's series go, as in ingress-nginx.
	if err := os.Remove(filepath.Join(e.dir, "wild.yaml")); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, changeTimeout, "the deleted Ingress's series gone", func() error {
		samples, err := scrapeMetrics(addr)
		if err != nil {
			return err
		}
		if _, ok := findSample(samples, "nginx_ingress_controller_requests", map[string]string{"ingress": "wild"}); ok {
			return fmt.Errorf("still exported")
		}
		if v, _ := findSample(samples, "nginx_ingress_controller_requests", shop); v != n {
			return fmt.Errorf("shop's requests = %v", v)
		}
		return nil
	})
}

// checkControllerMetrics: the controller series of issue 16 beyond the
// reload counters, with sensible values.
func checkControllerMetrics(t *testing.T, samples []metricSample, certPEM []byte) {
	t.Helper()
	if v, ok := findSample(samples, "nginx_ingress_controller_config_hash", nil); !ok || v == 0 {
		t.Errorf("config_hash = %v (exported: %v), want the running configuration's hash", v, ok)
	}
	// The dynamic configuration's dicts: their size, and some of it in use.
	for _, dict := range []string{"switchyard_config", "switchyard_certs"} {
		size, _ := findSample(samples, "switchyard_lua_dict_bytes", map[string]string{"dict": dict})
		free, ok := findSample(samples, "switchyard_lua_dict_free_bytes", map[string]string{"dict": dict})
		if size < 1<<16 || !ok || free >= size {
			t.Errorf("%s: size %v, free %v (exported: %v)", dict, size, free, ok)
		}
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	secure := map[string]string{"host": "secure.example.com", "secret_name": "secure-tls", "namespace": "default", "class": "switchyard"}
	if v, _ := findSample(samples, "nginx_ingress_controller_ssl_expire_time_seconds", secure); v != float64(cert.NotAfter.Unix()) {
		t.Errorf("ssl_expire_time_seconds of secure.example.com = %v, want its NotAfter %d", v, cert.NotAfter.Unix())
	}
	info := withLabels(secure, map[string]string{"serial_number": cert.SerialNumber.String(), "public_key_algorithm": cert.PublicKeyAlgorithm.String()})
	if v, _ := findSample(samples, "nginx_ingress_controller_ssl_certificate_info", info); v != 1 {
		t.Errorf("ssl_certificate_info of secure.example.com = %v, want 1 with %v", v, info)
	}
	for labels, want := range map[[2]string]float64{{"orphan", "no-service"}: 1, {"orphan", "no-endpoint"}: 1,
		{"shop", "no-service"}: 0, {"shop", "no-endpoint"}: 0} {
		if v, ok := findSample(samples, "nginx_ingress_controller_orphan_ingress",
			map[string]string{"namespace": "default", "ingress": labels[0], "type": labels[1]}); !ok || v != want {
			t.Errorf("orphan_ingress{ingress=%s,type=%s} = %v (exported: %v), want %v", labels[0], labels[1], v, ok, want)
		}
	}
}

// checkPipelineMetrics: every stage's latency was observed and every
// stage is caught up; the stages' bus traffic and the plugins' calls are
// counted.
func checkPipelineMetrics(t *testing.T, samples []metricSample) {
	t.Helper()
	for _, stage := range []string{"watcher", "translator", "annotations", "renderer", "applier"} {
		if v, _ := findSample(samples, "switchyard_stage_latency_seconds_count", map[string]string{"stage": stage}); v < 1 {
			t.Errorf("switchyard_stage_latency_seconds_count{stage=%s} = %v", stage, v)
		}
		if v, _ := findSample(samples, "switchyard_stage_generation", map[string]string{"stage": stage}); v < 1 {
			t.Errorf("switchyard_stage_generation{stage=%s} = %v", stage, v)
		}
		if stage == "watcher" {
			continue
		}
		if v, ok := findSample(samples, "switchyard_stage_generation_lag", map[string]string{"stage": stage}); !ok || v != 0 {
			t.Errorf("switchyard_stage_generation_lag{stage=%s} = %v (exported: %v), want 0 once all is served", stage, v, ok)
		}
	}
	for _, series := range []map[string]string{{"stage": "translator", "kind": "server"}, {"stage": "renderer", "kind": "file"},
		{"stage": "watcher", "kind": "commit"}, {"stage": "applier", "kind": "result"}} {
		if v, _ := findSample(samples, "switchyard_bus_messages_total", series); v < 1 {
			t.Errorf("switchyard_bus_messages_total%v = %v", series, v)
		}
		if v, _ := findSample(samples, "switchyard_bus_bytes_total", series); v < 1 {
			t.Errorf("switchyard_bus_bytes_total%v = %v", series, v)
		}
	}
	if v, _ := findSample(samples, "switchyard_plugin_call_duration_seconds_count", map[string]string{"plugin": "canary"}); v < 1 {
		t.Errorf("switchyard_plugin_call_duration_seconds_count{plugin=canary} = %v", v)
	}
}

// checkGrafanaMetrics: each series of testdata/grafana-metrics.txt is
// exported with the labels the dashboards use.
func checkGrafanaMetrics(t *testing.T, samples []metricSample) {
	t.Helper()
	data, err := os.ReadFile("testdata/grafana-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		name, labels := fields[0], fields[1:]
		var found *metricSample
		for i := range samples {
			if samples[i].name == name && hasLabels(samples[i], labels) {
				found = &samples[i]
				break
			}
		}
		if found == nil {
			t.Errorf("Grafana's %s with labels %v is not exported", name, labels)
		}
	}
}

func withLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func hasLabels(s metricSample, labels []string) bool {
	for _, l := range labels {
		if _, ok := s.labels[l]; !ok {
			return false
		}
	}
	return true
}
