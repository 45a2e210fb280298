package otelexport

import (
	"net"
	"strconv"
	"testing"
)

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		endpoint string
		ok       bool
	}{
		{"otel-collector.monitoring:4317", true},
		{"127.0.0.1:4317", true},
		{"[::1]:4317", true},
		{"otel-collector", false},
		{":4317", false},
		{"collector:0", false},
		{"collector:65536", false},
		{"collector:otlp", false},
		{"http://collector:4317", false},
	}
	for _, tt := range tests {
		if err := CheckEndpoint(tt.endpoint); (err == nil) != tt.ok {
			t.Errorf("CheckEndpoint(%q) = %v, want ok %v", tt.endpoint, err, tt.ok)
		}
	}
}

// FuzzCheckEndpoint: an accepted endpoint has a host and a port in range.
func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"a:1", "[::1]:4317", "x", ":", "a:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		if CheckEndpoint(endpoint) != nil {
			return
		}
		host, port, err := net.SplitHostPort(endpoint)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			t.Fatalf("accepted %q", endpoint)
		}
	})
}
