package main

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestListenAddrs: --http-addr and --https-addr are comma-separated
// lists; where the host cannot listen on IPv6, the IPv6 addresses are left
// out, each with a warning, and the others kept.
func TestListenAddrs(t *testing.T) {
	const flag = "0.0.0.0:8080, [::]:8080,localhost:9080,[fd00::2]:8080"
	for _, tc := range []struct {
		ipv6     bool
		want     []string
		warnings int
	}{
		{true, []string{"0.0.0.0:8080", "[::]:8080", "localhost:9080", "[fd00::2]:8080"}, 0},
		{false, []string{"0.0.0.0:8080", "localhost:9080"}, 2},
	} {
		core, logs := observer.New(zap.WarnLevel)
		if got := listenAddrs("--http-addr", flag, tc.ipv6, zap.New(core)); !slices.Equal(got, tc.want) {
			t.Errorf("ipv6 %v: %v, want %v", tc.ipv6, got, tc.want)
		}
		if logs.Len() != tc.warnings {
			t.Errorf("ipv6 %v: %d warnings, want %d: %v", tc.ipv6, logs.Len(), tc.warnings, logs.All())
		}
	}
}

// TestReservedPortsOfAddressLists: every port of a listed address is
// reserved (a TCP service cannot take the IPv6 listener's port either).
func TestReservedPortsOfAddressLists(t *testing.T) {
	o := &options{httpAddr: "0.0.0.0:8080,[::]:8081", httpsAddr: "0.0.0.0:8443"}
	ports := o.reservedPorts()
	for _, p := range []int{8080, 8081, 8443} {
		if _, ok := ports[p]; !ok {
			t.Errorf("port %d not reserved: %v", p, ports)
		}
	}
}
