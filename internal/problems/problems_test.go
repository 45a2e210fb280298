package problems

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"switchyard.dev/switchyard/bus"
)

func TestReporterLogsChangesOnce(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	r := NewReporter(zap.New(core))
	bad := bus.Problem{Field: "spec.rules[0].host", Reason: "InvalidHost", Message: `host "a_b" is not a DNS name`}
	other := bus.Problem{Field: "metadata.annotations", Reason: "InvalidAnnotation", Message: "x"}
	info := func(rejected bool, ps ...bus.Problem) *bus.IngressInfo {
		return &bus.IngressInfo{Namespace: "web", Name: "shop", Rejected: rejected, Problems: ps}
	}
	for _, step := range []struct {
		name   string
		do     func()
		logged int
	}{
		{"first report", func() { r.Report("k", info(true, bad)) }, 1},
		{"same problems again", func() { r.Report("k", info(true, bad)) }, 0},
		{"another key, same problems", func() { r.Report("k2", info(true, bad)) }, 1},
		{"problems change", func() { r.Report("k", info(true, bad, other)) }, 2},
		{"problems gone", func() { r.Report("k", info(false)) }, 0},
		{"back after being gone", func() { r.Report("k", info(true, bad)) }, 1},
		{"forgotten, then the same", func() { r.Forget("k"); r.Report("k", info(true, bad)) }, 1},
	} {
		step.do()
		got := logs.TakeAll()
		if len(got) != step.logged {
			t.Fatalf("%s: %d lines logged, want %d", step.name, len(got), step.logged)
		}
		for _, e := range got {
			fields := e.ContextMap()
			if e.Message != "ingress problem" || e.Level != zapcore.WarnLevel || fields["ingress"] != "web/shop" ||
				fields["rejected"] != true || fields["field"] == "" || fields["reason"] == "" || fields["message"] == "" {
				t.Errorf("%s: logged %s %q %v", step.name, e.Level, e.Message, fields)
			}
		}
	}
}
