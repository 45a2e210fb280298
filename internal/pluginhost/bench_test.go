package pluginhost

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/internal/cputime"
	"switchyard.dev/switchyard/plugins"
)

// BenchmarkApplyProxy10k sends the built-in proxy plugin, a real process,
// one batch of 10,000 Ingresses with five proxy annotations each, as at a
// controller's start; it reports the CPU time of the host and of the
// plugin process per batch.
func BenchmarkApplyProxy10k(b *testing.B) {
	c := launchBuilt(b, "switchyard.dev/switchyard/plugins/builtin/switchyard-plugins", "plugin", "proxy")
	batch := make([]plugins.Ingress, 10000)
	for i := range batch {
		batch[i] = plugins.Ingress{Namespace: "default", Name: fmt.Sprintf("ing-%d", i), Annotations: map[string]string{
			"proxy-body-size": "64m", "proxy-read-timeout": "3600", "proxy-send-timeout": "3600",
			"proxy-buffer-size": "16k", "upstream-vhost": "internal.example.com",
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	host, plugin := cputime.Process(), processCPU(b, c.Pid())
	b.ResetTimer()
	for b.Loop() {
		results, err := c.Apply(ctx, batch)
		if err != nil || len(results) != len(batch) || results[0].Features.Proxy == nil {
			b.Fatalf("Apply: %d results, %v", len(results), err)
		}
	}
	b.ReportMetric(cputime.PerOp(host, b.N), "host-cpu-ms/op")
	b.ReportMetric(float64((processCPU(b, c.Pid())-plugin).Microseconds())/1000/float64(b.N), "plugin-cpu-ms/op")
}

// processCPU is the user and system time of process pid, from /proc.
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second).
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
