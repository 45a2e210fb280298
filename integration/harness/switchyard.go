package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/internal/echo"
	"switchyard.dev/switchyard/internal/freeport"
	"switchyard.dev/switchyard/internal/lockedstart"
	"switchyard.dev/switchyard/internal/nginx"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds the switchyard binary (and switchyard-plugins beside it)
// once per test process and returns its path. Tests run the real binary: the same code users run.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		removeStaleBinaries()
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binDirPrefix, os.Getpid()))
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "switchyard")
		// switchyard-plugins lies next to switchyard, as make build
		// leaves them: the built-in plugins run from it.
		for _, b := range [][2]string{{binPath, "."}, {filepath.Join(dir, "switchyard-plugins"), "./plugins/builtin/switchyard-plugins"}} {
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Dir = repoRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// binDirPrefix starts the name of the temporary directory each test
// process builds its binaries into, followed by the process's pid.
const binDirPrefix = "switchyard-bin-"

// removeStaleBinaries deletes the binary directories of test processes
// that have exited. A test process has no hook to run when it exits (and
// may be killed), so each one clears what the earlier ones left: 113 MB
// each, which filled a disk after a few hundred runs.
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(dir), binDirPrefix), "-", 2)[0])
		if err == nil && processRunning(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// processRunning says whether pid runs (a zombie, dead but not yet
// reaped by its parent, does not).
func processRunning(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The command name may hold spaces: fields count from after ")".
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FreePort returns a loopback TCP port that was free a moment ago and that
// no other FreePort call of this test binary returned.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Process is a child process the test started; it is stopped at cleanup.
type Process struct {
	Cmd    *exec.Cmd
	Output *syncBuffer
	done   chan struct{}
}

// Start runs the binary with args and stops it (SIGINT, then SIGKILL) when
// the test ends.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(bin, args...), Output: &syncBuffer{}, done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = p.Output, p.Output
	// A test process killed from outside (a timeout, ^C on make bench)
	// runs no cleanup: its children get SIGTERM from the kernel instead
	// of running on with their ports and NGINX.
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := lockedstart.Start(p.Cmd, func(error) { close(p.done) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(20 * time.Second)
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), p.Output.String())
		}
	})
	return p
}

// Stop interrupts the process and waits for it, killing it after grace.
func (p *Process) Stop(grace time.Duration) {
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Exited says whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartEcho runs `switchyard echo` on a free loopback port and returns its port.
func StartEcho(t testing.TB, bin, service, pod string) int {
	t.Helper()
	port := FreePort(t)
	Start(t, bin, "echo", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--service", service, "--pod", pod)
	WaitFor(t, 10*time.Second, "echo backend "+pod, func() error {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err
	})
	return port
}

// WaitFor polls check every 10 ms until it returns nil or timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Switchyard is a running `switchyard run`.
type Switchyard struct {
	*Process
	HTTPAddr, HTTPSAddr string
	StateDir            string
	Manifests           string
	client              *http.Client
}

// RoutingEnv chooses the routing path of every Switchyard the harness
// starts: "lua" (--lua-routing) or "server-blocks"; unset, the default.
const RoutingEnv = "SWITCHYARD_TEST_ROUTING"

// StartSwitchyard runs `switchyard run` on free loopback ports with its own
// state dir, and waits until NGINX answers.
func StartSwitchyard(t testing.TB, manifests string, extra ...string) *Switchyard {
	t.Helper()
	s := newSwitchyard(t, manifests)
	s.start(t, extra...)
	return s
}

// newSwitchyard is a Switchyard on free loopback ports with its own state
// dir, not started.
func newSwitchyard(t testing.TB, manifests string) *Switchyard {
	t.Helper()
	Nginx(t)
	return &Switchyard{
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		StateDir:  StateDir(t),
		Manifests: manifests,
		client:    NewClient(),
	}
}

// StartSwitchyardDualStack is StartSwitchyard listening on [::1] too, on
// the same ports as on 127.0.0.1 (HTTPAddr and HTTPSAddr stay the IPv4
// addresses; IPv6Twin gives the other): --http-addr and --https-addr list
// both, as the manifests list [::] besides 0.0.0.0.
func StartSwitchyardDualStack(t testing.TB, manifests string, extra ...string) *Switchyard {
	t.Helper()
	s := newSwitchyard(t, manifests)
	// Later flags win over the ones start writes.
	s.start(t, append([]string{"--http-addr", s.HTTPAddr + "," + IPv6Twin(s.HTTPAddr),
		"--https-addr", s.HTTPSAddr + "," + IPv6Twin(s.HTTPSAddr)}, extra...)...)
	return s
}

// IPv6Twin is [::1] on the port of a 127.0.0.1 address.
func IPv6Twin(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort("::1", port)
}

// Restart runs another `switchyard run` with the same manifests, ports and
// state dir, as a supervisor does after the first one died.
func (s *Switchyard) Restart(t testing.TB, extra ...string) *Switchyard {
	t.Helper()
	next := &Switchyard{HTTPAddr: s.HTTPAddr, HTTPSAddr: s.HTTPSAddr, StateDir: s.StateDir, Manifests: s.Manifests, client: NewClient()}
	next.start(t, extra...)
	return next
}

func (s *Switchyard) start(t testing.TB, extra ...string) {
	t.Helper()
	bin := Binary(t)
	manifests := s.Manifests
	args := []string{"run"}
	if manifests != "" {
		args = append(args, "--manifests", manifests)
	}
	args = append(args, "--http-addr", s.HTTPAddr, "--https-addr", s.HTTPSAddr,
		"--state-dir", s.StateDir, "--worker-processes", strconv.Itoa(Workers), "--log-level", "debug", "--shutdown-grace", "5s")
	if mode := os.Getenv(RoutingEnv); mode != "" {
		// The whole suite once per routing path (Makefile); a test's own
		// --lua-routing, in extra, comes later and wins.
		args = append(args, "--lua-routing="+strconv.FormatBool(mode == "lua"))
	}
	args = append(args, extra...)
	s.Process = Start(t, bin, args...)
	WaitFor(t, 30*time.Second, "switchyard to serve", func() error {
		if s.Exited() {
			t.Fatalf("switchyard exited:\n%s", s.Output.String())
		}
		_, err := s.Get("switchyard-probe.invalid", "/")
		return err
	})
}

// StateDir makes a state directory that NGINX workers, which drop root,
// can reach: t.TempDir's parent is private to the test's user.
func StateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sy-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// NewClient returns an HTTP client that opens a new connection per request,
// so every request may land on any NGINX worker.
func NewClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // tests check certificates themselves
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// GetTLS sends GET https://host/path to NGINX's HTTPS listener, with host
// as the SNI name, as a browser would.
func (s *Switchyard) GetTLS(host, path string) (Response, error) {
	client := NewClient()
	transport := client.Transport.(*http.Transport)
	transport.TLSClientConfig.ServerName = host
	transport.ForceAttemptHTTP2 = true
	return Do(client, http.MethodGet, "https://"+s.HTTPSAddr+path, host, nil)
}

// Response is what came back through NGINX; Echo is set when an echo
// backend answered.
type Response struct {
	Proto  string // as the client saw it: "HTTP/1.1", "HTTP/2.0"
	Status int
	Header http.Header
	Body   []byte
	Echo   *EchoReply
}

// EchoReply is the JSON `switchyard echo` answers with.
type EchoReply = echo.Reply

// Get sends GET http://host/path to NGINX's HTTP listener.
func (s *Switchyard) Get(host, path string) (Response, error) {
	return Do(s.client, http.MethodGet, "http://"+s.HTTPAddr+path, host, nil)
}

// Do sends one request with the given Host header.
func Do(client *http.Client, method, url, host string, body []byte) (Response, error) {
	return DoWithHeaders(client, method, url, host, nil, body)
}

// DoWithHeaders sends one request with the given Host and other headers.
func DoWithHeaders(client *http.Client, method, url, host string, headers map[string]string, body ...[]byte) (Response, error) {
	var payload []byte
	if len(body) > 0 {
		payload = body[0]
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, bytes.NewReader(payload))
	if err != nil {
		return Response{}, err
	}
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(client, req)
}

// DoWithReader sends one request with the body read from body; a reader
// whose length net/http cannot tell is sent chunked.
func DoWithReader(client *http.Client, method, url, host string, body io.Reader) (Response, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, body)
	if err != nil {
		return Response{}, err
	}
	req.Host = host
	return do(client, req)
}

// do sends req and reads the answer, decoding an echo reply.
func do(client *http.Client, req *http.Request) (Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	r := Response{Proto: resp.Proto, Status: resp.StatusCode, Header: resp.Header, Body: data}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var e EchoReply
		if json.Unmarshal(data, &e) == nil && e.Pod != "" {
			r.Echo = &e
		}
	}
	return r, nil
}

// Prefix is the NGINX prefix below the state dir.
func (s *Switchyard) Prefix() string { return nginx.PrefixFor(s.StateDir) }

// DataPlane is what the running NGINX's Lua holds at path of its
// configuration endpoint ("/configuration/routes", "/configuration/backends"),
// read over the control socket: the hosts routed in Lua have no file.
func (s *Switchyard) DataPlane(t testing.TB, path string) string {
	t.Helper()
	data, err := ControlCall(ControlClient(s.ControlSocket(), 30*time.Second), http.MethodGet, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// ControlSocket is the unix socket of NGINX's configuration endpoint.
func (s *Switchyard) ControlSocket() string {
	return nginx.ControlSocketFor(s.Prefix())
}

// ControlClient talks to an NGINX configuration endpoint on socket, each
// request bounded by timeout.
func ControlClient(socket string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
}

// ControlCall sends one request to a configuration endpoint and returns
// the body of a 2xx answer; any other answer is an error quoting it.
func ControlCall(client *http.Client, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, "http://switchyard"+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, data)
	}
	return data, nil
}

// ConfDir is NGINX's live configuration directory.
func (s *Switchyard) ConfDir() string { return filepath.Join(s.Prefix(), nginx.ConfDir) }

// MasterPID reads NGINX's pid file.
func (s *Switchyard) MasterPID(t testing.TB) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Prefix(), "nginx.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// Workers is how many worker processes StartSwitchyard asks NGINX for.
const Workers = 2

// WorkerPIDs lists the master's workers once a reload has settled: workers
// of an earlier configuration may still be draining for a moment, and a
// baseline taken then would see them vanish and call it a reload.
func (s *Switchyard) WorkerPIDs(t testing.TB) []int {
	t.Helper()
	var pids []int
	WaitFor(t, 30*time.Second, "NGINX workers to settle", func() error {
		pids = ChildPIDs(t, s.MasterPID(t))
		if len(pids) != Workers {
			return fmt.Errorf("%d workers: %v", len(pids), pids)
		}
		return nil
	})
	return pids
}

// ChildPIDs lists a process's children from /proc.
func ChildPIDs(t testing.TB, pid int) []int {
	t.Helper()
	return nginx.ChildPIDs(pid)
}

// WriteFile writes a file atomically (temp file, then rename), as GitOps
// tools and editors do.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer collects a process's output safely across goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
