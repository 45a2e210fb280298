package otelexport_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/otelexport"
)

// fakeNginx answers POST /traces on a unix socket as tracing.lua does:
// first tracing off, then one batch of two spans, then empty batches.
func fakeNginx(t *testing.T, collector string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "control.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/traces" || r.URL.Query().Get("max") == "" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
			return
		}
		n := calls.Add(1)
		head := fmt.Sprintf(`{"endpoint":%q,"service":"edge","delay_ms":20,"batch":10,"dropped":7,"queued":0,"capacity":1,"free":1,"spans":[`, collector)
		switch n {
		case 1:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"request tracing is off"}`)
		case 2:
			fmt.Fprint(w, head+
				`{"t":"4bf92f3577b34da6a3ce929d0e0e4736","s":"00f067aa0ba902b7","p":"1111111111111111","n":"GET /shop","b":1700000000.123,"e":1700000000.456,"err":false,`+
				`"a":{"http.method":"GET","http.status_code":200,"upstream.response_time":0.002,"ingress.name":"web"}},`+
				`{"t":"4bf92f3577b34da6a3ce929d0e0e4737","s":"00f067aa0ba902b8","p":"","n":"/","b":1700000001,"e":1700000001.5,"err":true,"a":{}},`+
				`{"t":"not hex","s":"x","p":"","n":"skipped","b":0,"e":0,"err":false,"a":{}}]}`)
		default:
			fmt.Fprint(w, head+"]}")
		}
	})}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}

func TestRequestSpansExported(t *testing.T) {
	receiver := harness.StartOTLP(t)
	r := otelexport.NewRequestSpans(fakeNginx(t, receiver.Addr), func(err error) { t.Log(err) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(30 * time.Second)
	for len(receiver.Spans()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("spans received: %+v", receiver.Spans())
		}
		time.Sleep(20 * time.Millisecond)
	}
	spans := receiver.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (one had bad IDs): %+v", len(spans), spans)
	}
	s := spans[0]
	if s.Service != "edge" || s.Name != "GET /shop" || s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.SpanID != "00f067aa0ba902b7" ||
		s.Parent != "1111111111111111" || s.Attributes["http.method"] != "GET" || s.Attributes["ingress.name"] != "web" {
		t.Errorf("span %+v", s)
	}
	if spans[1].Parent != "" || spans[1].Name != "/" {
		t.Errorf("root span %+v", spans[1])
	}
	if r.Exported() != 2 || r.Dropped() != 7 || r.ExportErrors() != 0 {
		t.Errorf("exported %d, dropped %v, errors %d", r.Exported(), r.Dropped(), r.ExportErrors())
	}
}
