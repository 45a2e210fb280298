package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestReadyz answers 200 while every stage reaches the bus, and 503 naming
// the stage that cannot.
func TestReadyz(t *testing.T) {
	up := harness.Bus(t, "up")
	r := &readiness{conns: map[string]*bus.Conn{"translator": up}}
	if code, body := get(r); code != http.StatusOK {
		t.Fatalf("with the bus reachable: %d %s", code, body)
	}

	// A server that is not there: the connection keeps trying.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	down, err := bus.Connect("nats://"+addr, "down")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	r.add("watcher", down)
	if code, body := get(r); code != http.StatusServiceUnavailable || !strings.Contains(body, "watcher") || strings.Contains(body, "translator") {
		t.Fatalf("with the watcher's bus away: %d %s", code, body)
	}
}

func get(r *readiness) (int, string) {
	rec := httptest.NewRecorder()
	r.serveHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}
