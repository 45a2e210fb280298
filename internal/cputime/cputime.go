// Package cputime reads the CPU time this process has used, for
// benchmarks: on a shared machine CPU time (GC included) says more about
// a change than wall time does.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system time this process has used so far; 0
// when the system does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PerOp is the CPU time used since start divided by n, in milliseconds,
// for testing.B.ReportMetric(…, "cpu-ms/op").
func PerOp(start time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64((Process() - start).Microseconds()) / 1000 / float64(n)
}
