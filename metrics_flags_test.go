package main

import (
	"flag"
	"strings"
	"testing"
)

// TestMetricsFlags: NGINX counts requests only with --metrics-addr and
// --enable-metrics (on by default, as in ingress-nginx).
func TestMetricsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--metrics-addr", ":10254"}, metricsDictSize},
		{[]string{"--metrics-addr", ":10254", "--enable-metrics=false"}, ""},
	} {
		var o options
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		o.register(fs)
		if err := fs.Parse(append([]string{"--state-dir", t.TempDir()}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := o.rendererConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MetricsDictSize != tc.want {
			t.Errorf("%v: metrics dict %q, want %q", tc.args, cfg.MetricsDictSize, tc.want)
		}
		if !o.metricsPerHost {
			t.Errorf("%v: --metrics-per-host is off by default", tc.args)
		}
	}
}

// TestMetricsBucketFlags: ingress-nginx's bucket flags reach the renderer;
// what is not a number is refused.
func TestMetricsBucketFlags(t *testing.T) {
	o := options{metricsAddr: ":10254", enableMetrics: true, stateDir: t.TempDir(), nginxUser: "nobody", timeBuckets: "0.1, 1,10", sizeBuckets: "1000"}
	cfg, err := o.rendererConfig()
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.MetricsBuckets
	if len(b.Time) != 3 || b.Time[0] != 0.1 || b.Length != nil || len(b.Size) != 1 {
		t.Errorf("buckets %+v", b)
	}
	o.lengthBuckets = "10,x"
	if _, err := o.rendererConfig(); err == nil || !strings.Contains(err.Error(), "--length-buckets") {
		t.Errorf("a bad bound: %v", err)
	}
}
