package metrics

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseStubStatus(t *testing.T) {
	got, err := parseStubStatus("Active connections: 3 \nserver accepts handled requests\n 10 9 25 \nReading: 1 Writing: 2 Waiting: 0 \n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (stubStatus{active: 3, accepted: 10, handled: 9, requests: 25, reading: 1, writing: 2, waiting: 0}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "<html>", "Active connections: x \nserver accepts handled requests\n 1 1 1 \nReading: 0 Writing: 1 Waiting: 0 \n"} {
		if _, err := parseStubStatus(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestProcessCollector: this test's process stands in for the NGINX
// master, a sleep for a worker; stub_status is canned.
func TestProcessCollector(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pidFile := filepath.Join(t.TempDir(), "nginx.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := func(context.Context) ([]byte, error) {
		return []byte("Active connections: 3 \nserver accepts handled requests\n 10 9 25 \nReading: 1 Writing: 2 Waiting: 0 \n"), nil
	}
	l := Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"}
	c := New(l)
	c.RegisterProcess(newProcessCollector(l, status, pidFile, "/proc", nil))
	_, body := scrape(t, c.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
	cl := `controller_class="nginx",controller_namespace="ns",controller_pod="p-1"`
	for _, want := range []string{
		`nginx_ingress_controller_nginx_process_connections{` + cl + `,state="active"} 3`,
		`nginx_ingress_controller_nginx_process_connections{` + cl + `,state="waiting"} 0`,
		`nginx_ingress_controller_nginx_process_connections_total{` + cl + `,state="handled"} 9`,
		`nginx_ingress_controller_nginx_process_requests_total{` + cl + `} 25`,
		`nginx_ingress_controller_nginx_process_num_procs{` + cl + `} 2`,
		`nginx_ingress_controller_nginx_process_cpu_seconds_total{`,
		`nginx_ingress_controller_nginx_process_read_bytes_total{`,
		`nginx_ingress_controller_nginx_process_oldest_start_time_seconds{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "nginx_process_resident_memory_bytes{"+cl+"} 0\n") {
		t.Error("no resident memory counted")
	}
}

// TestProcessCounterKeepsExitedProcesses: the CPU a process used stays in
// the total after it exits (NGINX replaces its workers on every reload).
func TestProcessCounterKeepsExitedProcesses(t *testing.T) {
	c := newProcessCollector(Labels{}, nil, "", "/proc", nil)
	c.add(10, usage{cpu: 2, readBytes: 100})
	c.seen = map[int]usage{10: {cpu: 2, readBytes: 100}}
	c.add(10, usage{cpu: 3, readBytes: 150})
	c.add(11, usage{cpu: 1})
	c.seen = map[int]usage{11: {cpu: 1}} // 10 exited
	c.add(11, usage{cpu: 1.5})
	if c.totals.cpu != 4.5 || c.totals.readBytes != 150 {
		t.Errorf("totals %+v, want cpu 4.5, read 150", c.totals)
	}
}

func TestProcessCollectorWithoutNginx(t *testing.T) {
	var errs []error
	l := Labels{}
	c := New(l)
	c.RegisterProcess(newProcessCollector(l, func(context.Context) ([]byte, error) { return nil, errors.New("refused") },
		filepath.Join(t.TempDir(), "none.pid"), "/proc", func(err error) { errs = append(errs, err) }))
	code, body := scrape(t, c.Handler(func() error { return nil }, func() error { return nil }), "/metrics")
	if code != 200 || strings.Contains(body, "nginx_process_") {
		t.Errorf("scrape without NGINX: %d\n%s", code, body)
	}
	if len(errs) != 2 {
		t.Errorf("errors reported: %v", errs)
	}
}
