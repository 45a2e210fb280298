package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchyard.dev/switchyard/bus"
)

// TestPipeline: what the stages report becomes the pipeline's series: the
// latency of each published generation from its ingest, messages and bytes
// by stage and kind, the generation each stage is done with, the lag
// behind its input's last published generation (a generation that changed
// nothing for the input does not count), plugin calls and restarts, and
// the leader election.
func TestPipeline(t *testing.T) {
	p := NewPipeline(Labels{Namespace: "ns", Class: "switchyard", Pod: "p-1"})
	ingest := time.Unix(1700000000, 0)
	p.BusSent(bus.StageTranslator, "server", 300)
	p.BusSent(bus.StageTranslator, "server", 200)
	p.BusSent(bus.StageTranslator, "commit", 40)
	p.handle(bus.StageWatcher, 7, ingest, true, ingest.Add(time.Millisecond))
	p.handle(bus.StageTranslator, 7, ingest, true, ingest.Add(30*time.Millisecond))
	p.handle(bus.StageAnnotations, 6, ingest, true, ingest.Add(40*time.Millisecond))
	// The renderer found nothing to change in generation 5: done, not
	// published; the applier is done with the renderer's last, 4.
	p.handle(bus.StageRenderer, 4, ingest, true, ingest.Add(50*time.Millisecond))
	p.handle(bus.StageRenderer, 5, ingest, false, ingest.Add(60*time.Millisecond))
	p.handle(bus.StageApplier, 4, ingest, true, ingest.Add(2*time.Second))
	p.PluginCall("proxy", 3*time.Millisecond, false)
	p.PluginCall("auth", time.Second, true)
	p.PluginRestart("auth")
	p.LeaderElection("switchyard-leader", true)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(p)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				if !strings.HasPrefix(l.GetName(), "controller_") {
					key = append(key, l.GetName()+"="+l.GetValue())
				} else if l.GetValue() == "" {
					t.Errorf("%s: constant label %s empty", mf.GetName(), l.GetName())
				}
			}
			name := mf.GetName() + "{" + strings.Join(key, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				got[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
				got[name+"_sum"] = m.GetHistogram().GetSampleSum()
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			default:
				got[name] = m.GetGauge().GetValue()
			}
		}
	}
	for name, want := range map[string]float64{
		"switchyard_bus_messages_total{kind=server,stage=translator}":             2,
		"switchyard_bus_bytes_total{kind=server,stage=translator}":                500,
		"switchyard_bus_messages_total{kind=commit,stage=translator}":             1,
		"switchyard_stage_latency_seconds{stage=translator}_count":                1,
		"switchyard_stage_latency_seconds{stage=translator}_sum":                  0.03,
		"switchyard_stage_latency_seconds{stage=renderer}_count":                  1, // the unpublished generation is not a latency
		"switchyard_stage_latency_seconds{stage=applier}_sum":                     2,
		"switchyard_stage_generation{stage=renderer}":                             5,
		"switchyard_stage_committed_generation{stage=renderer}":                   4,
		"switchyard_stage_generation_lag{stage=translator}":                       0,
		"switchyard_stage_generation_lag{stage=annotations}":                      1,
		"switchyard_stage_generation_lag{stage=renderer}":                         1, // annotations published 6, the renderer is done with 5
		"switchyard_stage_generation_lag{stage=applier}":                          0,
		"switchyard_plugin_call_duration_seconds{plugin=proxy}_count":             1,
		"switchyard_plugin_call_errors_total{plugin=proxy}":                       0,
		"switchyard_plugin_call_errors_total{plugin=auth}":                        1,
		"switchyard_plugin_restarts_total{plugin=auth}":                           1,
		"nginx_ingress_controller_leader_election_status{name=switchyard-leader}": 1,
	} {
		if v, ok := got[name]; !ok || v < want-1e-9 || v > want+1e-9 {
			t.Errorf("%s = %v (exported: %v), want %v", name, v, ok, want)
		}
	}
	p.LeaderElection("switchyard-leader", false)
	if v := gaugeValue(t, p, "nginx_ingress_controller_leader_election_status"); v != 0 {
		t.Errorf("leader_election_status after stepping down = %v", v)
	}
}

func gaugeValue(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	n, v := seriesOf(t, c, name)
	if n != 1 {
		t.Fatalf("%d series %s, want 1", n, name)
	}
	return v
}
