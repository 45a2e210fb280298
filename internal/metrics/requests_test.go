package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// luaDump builds what metrics.lua answers: values keyed as it keys them.
func luaDump(t *testing.T, values map[string]float64) []byte {
	t.Helper()
	time := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	length := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	size := []float64{10, 100, 1000, 10000, 100000, 1000000, 10000000}
	head, err := json.Marshal(map[string]any{
		"buckets":  map[string][]float64{"rd": time, "cd": time, "hd": time, "sd": time, "rq": length, "rs": length, "bs": size},
		"capacity": 1 << 20, "free": 1 << 19,
		"dicts": map[string]any{"switchyard_config": map[string]int{"capacity": 1 << 20, "free": 1 << 18},
			"some_other_dict": map[string]int{"capacity": 1, "free": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := append(head, '\n')
	for k, v := range values {
		out = fmt.Appendf(out, "%s\t%v\n", k, v)
	}
	return out
}

// key is a dict key of metrics.lua for the labels status, method, path,
// namespace, ingress, service, canary and server name.
func key(code, slot string, labels ...string) string {
	return code + "\x01" + slot + "\x01" + strings.Join(labels, "\x01")
}

// TestRequestCollector: NGINX's aggregates become ingress-nginx's series,
// with cumulative buckets, the requests counter from request_duration,
// and the host label per host or merged away.
func TestRequestCollector(t *testing.T) {
	shop := []string{"200", "GET", "/shop", "shop", "web", "web", ""}
	values := map[string]float64{
		"dropped": 3,
		key("rd", "1", append(shop, "shop.example.com")...):        2, // <= 5ms
		key("rd", "4", append(shop, "shop.example.com")...):        1, // <= 50ms
		key("rd", "s", append(shop, "shop.example.com")...):        0.05,
		key("rd", "12", append(shop, `~^[^.]+\.example\.com$`)...): 1, // +Inf
		key("rd", "s", append(shop, `~^[^.]+\.example\.com$`)...):  42,
		key("cd", "1", append(shop, "shop.example.com")...):        3,
		key("cd", "s", append(shop, "shop.example.com")...):        0.003,
		key("bs", "3", append(shop, "shop.example.com")...):        3,
		key("bs", "s", append(shop, "shop.example.com")...):        1500,
		key("rd", "1", "404", "GET", "", "", "", "", "", "_"):      7,
		"rd\x01junk":            1, // left out
		key("zz", "1", shop...): 1,
	}
	fetch := func(context.Context) ([]byte, error) { return luaDump(t, values), nil }
	l := Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"}
	cl := `controller_class="nginx",controller_namespace="ns",controller_pod="p-1"`

	perHost := New(l)
	perHost.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{PerHost: true}, nil))
	_, body := scrape(t, perHost.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
	shopLabels := `canary="",` + cl + `,host="shop.example.com",ingress="web",method="GET",namespace="shop",path="/shop",service="web",status="200"`
	for _, want := range []string{
		`nginx_ingress_controller_requests{` + shopLabels + `} 3`,
		`nginx_ingress_controller_request_duration_seconds_bucket{` + shopLabels + `,le="0.005"} 2`,
		`nginx_ingress_controller_request_duration_seconds_bucket{` + shopLabels + `,le="0.05"} 3`,
		`nginx_ingress_controller_request_duration_seconds_bucket{` + shopLabels + `,le="+Inf"} 3`,
		`nginx_ingress_controller_request_duration_seconds_sum{` + shopLabels + `} 0.05`,
		`nginx_ingress_controller_request_duration_seconds_count{` + shopLabels + `} 3`,
		`nginx_ingress_controller_bytes_sent_bucket{` + shopLabels + `,le="1000"} 3`,
		`nginx_ingress_controller_bytes_sent_bucket{` + shopLabels + `,le="100"} 0`,
		`nginx_ingress_controller_bytes_sent_sum{` + shopLabels + `} 1500`,
		`host="*.example.com"`,
		`nginx_ingress_controller_requests{canary="",` + cl + `,host="_",ingress="",method="GET",namespace="",path="",service="",status="404"} 7`,
		`nginx_ingress_controller_ingress_upstream_latency_seconds_count{canary="",` + cl + `,ingress="web",namespace="shop",service="web"} 3`,
		`nginx_ingress_controller_ingress_upstream_latency_seconds_sum{canary="",` + cl + `,ingress="web",namespace="shop",service="web"} 0.003`,
		`switchyard_request_metrics_dropped_total{` + cl + `} 3`,
		`switchyard_request_metrics_dict_bytes{` + cl + `} 1.048576e+06`,
		`switchyard_request_metrics_read_errors_total{` + cl + `} 0`,
		`switchyard_lua_dict_bytes{` + cl + `,dict="switchyard_config"} 1.048576e+06`,
		`switchyard_lua_dict_free_bytes{` + cl + `,dict="switchyard_config"} 262144`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "zz") || strings.Contains(body, "header_duration_seconds_count") || strings.Contains(body, "some_other_dict") {
		t.Errorf("series without observations or of unknown histograms exported:\n%s", body)
	}

	merged := New(l)
	merged.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{}, nil))
	_, body = scrape(t, merged.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
	noHost := `canary="",` + cl + `,ingress="web",method="GET",namespace="shop",path="/shop",service="web",status="200"`
	for _, want := range []string{
		`nginx_ingress_controller_requests{` + noHost + `} 4`,
		`nginx_ingress_controller_request_duration_seconds_sum{` + noHost + `} 42.05`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("without hosts, metrics lack %s", want)
		}
	}
	if strings.Contains(body, "host=") {
		t.Error("a host label without --metrics-per-host")
	}

	classes := New(l)
	classes.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{StatusClasses: true,
		Exclude: []string{"nginx_ingress_controller_bytes_sent", "request_size", "ingress_upstream_latency_seconds"}}, nil))
	_, body = scrape(t, classes.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
	for _, want := range []string{
		`nginx_ingress_controller_requests{canary="",` + cl + `,ingress="web",method="GET",namespace="shop",path="/shop",service="web",status="2xx"} 4`,
		`nginx_ingress_controller_requests{canary="",` + cl + `,ingress="",method="GET",namespace="",path="",service="",status="4xx"} 7`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("with status classes, metrics lack %s", want)
		}
	}
	for _, gone := range []string{`status="200"`, "nginx_ingress_controller_bytes_sent", "nginx_ingress_controller_request_size", "upstream_latency"} {
		if strings.Contains(body, gone) {
			t.Errorf("%s exported with status classes and exclusions", gone)
		}
	}
}

// TestRequestCollectorUnreadable: when NGINX cannot be read (not started,
// or an answer that is not the dump) the scrape still answers, with the
// controller's series and one more read error.
func TestRequestCollectorUnreadable(t *testing.T) {
	l := Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"}
	for name, fetch := range map[string]func(context.Context) ([]byte, error){
		"no NGINX": func(context.Context) ([]byte, error) { return nil, errors.New("connection refused") },
		"not JSON": func(context.Context) ([]byte, error) { return []byte("<html>"), nil },
		"bad buckets": func(context.Context) ([]byte, error) {
			return []byte("{\"buckets\":{\"rd\":[2,1]}}\nrd\x011\x01\t1\n"), nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			var reported error
			c := New(l)
			c.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{PerHost: true}, func(err error) { reported = err }))
			code, body := scrape(t, c.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
			if code != 200 || !strings.Contains(body, "nginx_ingress_controller_build_info") {
				t.Fatalf("scrape: %d\n%s", code, body)
			}
			if !strings.Contains(body, "switchyard_request_metrics_read_errors_total{") || strings.Contains(body, "read_errors_total{controller_class=\"nginx\",controller_namespace=\"ns\",controller_pod=\"p-1\"} 0") {
				t.Errorf("read error not counted:\n%s", body)
			}
			if reported == nil {
				t.Error("the error was not reported")
			}
		})
	}
}

func TestHostLabel(t *testing.T) {
	for in, want := range map[string]string{
		"shop.example.com":         "shop.example.com",
		"_":                        "_",
		"":                         "_",
		`~^[^.]+\.example\.com$`:   "*.example.com",
		`^[^.]+\.a\.example\.com$`: "*.a.example.com",
	} {
		if got := hostLabel(in); got != want {
			t.Errorf("hostLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseDump: whatever NGINX answers (its label values come from
// Ingress paths and names), parsing and exporting never panic, and every
// exported series has one value per label.
func FuzzParseDump(f *testing.F) {
	f.Add([]byte("{\"buckets\":{\"rd\":[1],\"cd\":[1],\"hd\":[1],\"sd\":[1],\"rq\":[1],\"rs\":[1],\"bs\":[1]}}\nrd\x011\x01200\x01GET\x01/\x01a\x01b\x01c\x01\x01_\t1\nrd\x01s\x01200\x01GET\x01/\x01a\tb\x01b\x01c\x01\x01_\t0.5\n"))
	f.Add([]byte("{\"buckets\":{\"rd\":[1,2]}}\ndropped\t1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDump(data)
		if err != nil {
			return
		}
		for _, perHost := range []bool{true, false} {
			want := len(requestLabels)
			if !perHost {
				want--
			}
			for _, s := range d.aggregate(perHost, perHost) {
				if len(s.labels) != want {
					t.Fatalf("series with %d labels: %q", len(s.labels), s.labels)
				}
				for code, h := range s.hists {
					if len(h.cumulative(d.buckets[code])) != len(d.buckets[code]) {
						t.Fatalf("buckets lost")
					}
				}
			}
		}
	})
}

// TestDeletedIngressesLeftOut: once the pipeline says which Ingresses
// exist, the series of the others go; the catch-all's stay.
func TestDeletedIngressesLeftOut(t *testing.T) {
	values := map[string]float64{
		key("rd", "1", "200", "GET", "/", "shop", "web", "web", "", "_"):  1,
		key("rd", "1", "200", "GET", "/", "shop", "gone", "web", "", "_"): 1,
		key("rd", "1", "404", "GET", "", "", "", "", "", "_"):             1,
	}
	fetch := func(context.Context) ([]byte, error) { return luaDump(t, values), nil }
	set := NewIngressSet()
	l := Labels{}
	c := New(l)
	c.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{Ingresses: set}, nil))
	h := c.Handler(func() error { return nil }, func() error { return nil })
	if _, body := scrape(t, h, "/metrics"); !strings.Contains(body, `ingress="gone"`) {
		t.Error("before the pipeline reported, a series was left out")
	}
	set.Update(bus.Snapshot{Full: true, Puts: map[string][]byte{
		bus.Key(bus.KindIngress, "shop", "web"): []byte("{}"), bus.Key(bus.KindIngress, "shop", "gone"): []byte("{}"),
		bus.SettingsKey: []byte("{}")}})
	set.Update(bus.Snapshot{Deletes: []string{bus.Key(bus.KindIngress, "shop", "gone")}})
	_, body := scrape(t, h, "/metrics")
	if strings.Contains(body, `ingress="gone"`) {
		t.Error("the series of a deleted Ingress is exported")
	}
	for _, want := range []string{`ingress="web"`, `status="404"`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
