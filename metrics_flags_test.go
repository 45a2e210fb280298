package main

import (
	"flag"
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
