package renderer

import (
	"math"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestLabelsView: the variables a location sets for the per-request
// metrics, quoted, with a regex path's "$" and "\" kept literal.
func TestLabelsView(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ingress string
		labels  metricLabels
		want    labelsView
	}{
		{"catch-all without an Ingress: all empty, as ingress-nginx", "", metricLabels{},
			labelsView{`""`, `""`, `""`, `""`, `""`}},
		{"prefix path", "shop/web", metricLabels{path: "/shop", service: "web", servicePort: "80"},
			labelsView{`"shop"`, `"web"`, `"web"`, `"80"`, `"/shop"`}},
		{"named port", "shop/web", metricLabels{path: "/", service: "web", servicePort: "http"},
			labelsView{`"shop"`, `"web"`, `"web"`, `"http"`, `"/"`}},
		{"regex path", "ns/rx", metricLabels{path: `/api/v[0-9]+\.json$`, service: "api", servicePort: "8080"},
			labelsView{`"ns"`, `"rx"`, `"api"`, `"8080"`, `"/api/v[0-9]+\\.json${switchyard_dollar}"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newLabelsView(tc.ingress, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestLuaLabels: the labels balancer.rewrite hands to the metrics are the
// values the location's variables hold (TestLabelsView), as Lua literals:
// byte 1 between them, written so that no digit can extend the escape,
// and a regex path's "\" escaped. What could end the literal is refused.
func TestLuaLabels(t *testing.T) {
	for _, tc := range []struct {
		name, ingress, host string
		labels              metricLabels
		want, wantHost      string
		wantErr             bool
	}{
		{name: "catch-all without an Ingress", host: "_", want: `"\001\001\001"`, wantHost: `"_"`},
		{name: "prefix path", ingress: "shop/web", host: "shop.example.com",
			labels: metricLabels{path: "/shop", service: "web", servicePort: "80"},
			want:   `"/shop\001shop\001web\001web"`, wantHost: `"shop.example.com"`},
		{name: "digits after a separator stay digits", ingress: "1/2", host: "*.example.com",
			labels: metricLabels{path: "/3", service: "4"},
			want:   `"/3\0011\0012\0014"`, wantHost: `"*.example.com"`},
		{name: "regex path", ingress: "ns/rx", host: "h",
			labels: metricLabels{path: `/api/v[0-9]+\.json$`, service: "api"},
			want:   `"/api/v[0-9]+\\.json$\001ns\001rx\001api"`, wantHost: `"h"`},
		{name: "a quote in the path", ingress: "ns/q", host: "h", labels: metricLabels{path: `/a"b`}, wantErr: true},
		{name: "a newline in the path", ingress: "ns/q", host: "h", labels: metricLabels{path: "/a\nb"}, wantErr: true},
		{name: "an invalid Service", ingress: "ns/q", host: "h", labels: metricLabels{path: "/", service: `a"`}, wantErr: true},
		{name: "an invalid Ingress", ingress: `ns/"q`, host: "h", labels: metricLabels{path: "/"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, host, err := luaLabels(tc.ingress, tc.labels, tc.host)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if got != tc.want || host != tc.wantHost {
				t.Errorf("got %s, %s; want %s, %s", got, host, tc.want, tc.wantHost)
			}
		})
	}
}

// TestLabelsOf: the model's location gives its labels; the Ingress path,
// not the NGINX location's, so Prefix /shop is "/shop" in both of its
// locations.
func TestLabelsOf(t *testing.T) {
	locs, err := nginxLocations([]bus.Location{{Path: "/shop", PathType: bus.PathPrefix, Backend: "shop-web-80",
		Ingress: "shop/web", Service: "web", ServicePort: "80"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(locs) != 2 {
		t.Fatalf("want /shop/ and = /shop, got %+v", locs)
	}
	for _, l := range locs {
		if want := (metricLabels{path: "/shop", service: "web", servicePort: "80"}); l.labels != want {
			t.Errorf("location %s%s: labels %+v, want %+v", l.Modifier, l.Path, l.labels, want)
		}
	}
	if got := labelsOf(bus.Location{Path: "/", Backend: bus.DefaultBackendName}); got != (metricLabels{}) {
		t.Errorf("catch-all labels %+v", got)
	}
}

// TestMetricsInNginxConf: with a metrics dict the http block declares it,
// counts every request in the log phase, and the control endpoint's own
// requests are not counted; without one, none of it is written.
func TestMetricsInNginxConf(t *testing.T) {
	cfg := DefaultConfig()
	off, err := renderMain(cfg, bus.DefaultSettings(), sources{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(off, "switchyard.metrics") || strings.Contains(off, "switchyard_metrics") {
		t.Errorf("metrics off, but nginx.conf has them:\n%s", off)
	}
	cfg.MetricsDictSize = "16m"
	on, err := renderMain(cfg, bus.DefaultSettings(), sources{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"lua_shared_dict switchyard_metrics 16m;",
		`require("switchyard.metrics").init()`,
		"require(\"switchyard.balancer\").init_worker()\n        require(\"switchyard.metrics\").init_worker()",
		"require(\"switchyard.balancer\").log()\n        require(\"switchyard.metrics\").log()",
		"access_log off;\n        # Not a request to count",
		`set $location_path "";`,
		"geo $switchyard_dollar {\n        default \"$\";",
		"location = /nginx_status {\n            stub_status;",
	} {
		if !strings.Contains(on, want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	cfg.MetricsDictSize = "16m;x"
	if err := cfg.Validate(); err == nil {
		t.Error("a metrics dict size with a ';' was accepted")
	}
}

// TestMetricsBuckets: the bucket flags become metrics.lua's init argument;
// bounds that are not finite and increasing, or too many, are refused.
func TestMetricsBuckets(t *testing.T) {
	got, err := MetricsBuckets{Time: []float64{0.1, 1, 10}, Size: []float64{1e6}}.luaInit()
	if err != nil {
		t.Fatal(err)
	}
	if want := "{ time = { 0.1, 1, 10 }, size = { 1e+06 } }"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, _ := (MetricsBuckets{}).luaInit(); got != "" {
		t.Errorf("defaults: %q", got)
	}
	for _, bad := range [][]float64{{}, {2, 1}, {1, 1}, {math.NaN()}, {math.Inf(1)}, make([]float64, maxBuckets+1)} {
		if _, err := (MetricsBuckets{Length: bad}).luaInit(); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
	cfg := DefaultConfig()
	cfg.MetricsDictSize = "16m"
	cfg.MetricsBuckets = MetricsBuckets{Time: []float64{0.5}}
	conf, err := renderMain(cfg, bus.DefaultSettings(), sources{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conf, `require("switchyard.metrics").init({ time = { 0.5 } })`) {
		t.Errorf("nginx.conf lacks the buckets")
	}
	cfg.MetricsBuckets = MetricsBuckets{Time: []float64{2, 1}}
	if err := cfg.Validate(); err == nil {
		t.Error("decreasing buckets passed Validate")
	}
}
