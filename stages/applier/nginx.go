package applier

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// nginxProcess is the NGINX master, a child of this process. Its command
// line names the prefix, so an operator can tell which state dir it serves.
type nginxProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the master exits
	err  error         // why it exited; read after done
}

func nginxArgs(prefix string, extra ...string) []string {
	return append([]string{"-p", prefix + "/", "-c", filepath.Join(ConfDir, "nginx.conf"), "-e", "stderr"}, extra...)
}

// startNginx starts the master in the foreground (daemon off) and streams
// its log lines into the logger.
func startNginx(bin, prefix string, log *zap.Logger) (*nginxProcess, error) {
	cmd := exec.Command(bin, nginxArgs(prefix, "-g", "daemon off; master_process on;")...)
	cmd.Dir = prefix
	// Its own process group: a terminal's Ctrl-C reaches only us, and we stop
	// NGINX gracefully. If we die, the kernel stops it (SIGTERM: the master
	// stops its workers and exits), so no NGINX outlives us holding the
	// ports; the next start begins a fresh one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	// Stdout stays nil (/dev/null): any other writer adds a pipe that
	// orphaned workers would hold open, and Wait would never return.
	p := &nginxProcess{cmd: cmd, done: make(chan struct{})}
	if err := startOnLockedThread(cmd, func(err error) { p.err = err; close(p.done) }); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	go forwardLog(stderr, log)
	return p, nil
}

// startOnLockedThread starts cmd from an OS thread that lives until cmd
// exits, then calls exited with Wait's result. Pdeathsig fires when the
// thread that forked the child ends, not the process (Go issue 27505); a
// goroutine may otherwise run on a thread the runtime later retires, and
// NGINX would be told its parent died while we still run. Locked here, the
// signal comes exactly when this process dies, however it dies (kill -9,
// the OOM killer): NGINX does not outlive its controller.
func startOnLockedThread(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine ends its thread ends too,
		// which is harmless once the child has exited.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}

// stopLeftover ends an NGINX master that serves this prefix but is not
// ours: one an earlier controller left (killed before it could set up the
// parent-death signal, or a version without it). It would hold the ports,
// the new master could not bind them, and nobody would ever stop it. Only
// a master whose command line names this prefix is touched.
func stopLeftover(prefix string, log *zap.Logger) {
	data, err := os.ReadFile(filepath.Join(prefix, "nginx.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 || !isMasterOf(pid, prefix) {
		return
	}
	log.Warn("stopping an NGINX an earlier controller left running on this prefix", zap.Int("pid", pid))
	_ = syscall.Kill(pid, syscall.SIGTERM) // fast shutdown: it stops its workers
	deadline := time.Now().Add(10 * time.Second)
	for isMasterOf(pid, prefix) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if isMasterOf(pid, prefix) {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group: master and workers
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// isMasterOf says whether pid is a running NGINX master started with
// prefix (NGINX rewrites its command line to "nginx: master process
// <binary> -p <prefix>/ ..."; a zombie's is empty).
func isMasterOf(pid int, prefix string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	line := strings.ReplaceAll(string(data), "\x00", " ")
	return strings.HasPrefix(line, "nginx: master process ") && strings.Contains(line, " -p "+prefix+"/ ")
}

func (p *nginxProcess) pid() int { return p.cmd.Process.Pid }

func (p *nginxProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// reload asks the master to start new workers with the new configuration
// and to drain the old ones gracefully.
func (p *nginxProcess) reload() error {
	if p.exited() {
		return errors.New("nginx is not running")
	}
	return p.cmd.Process.Signal(syscall.SIGHUP)
}

// stop shuts NGINX down gracefully: SIGQUIT lets workers finish their
// requests (bounded by worker_shutdown_timeout); past grace it is
// terminated, then killed.
func (p *nginxProcess) stop(grace time.Duration) {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGQUIT, grace}, {syscall.SIGTERM, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}}
	for _, s := range steps {
		if p.exited() {
			return
		}
		_ = p.cmd.Process.Signal(s.sig)
		select {
		case <-p.done:
			return
		case <-time.After(s.wait):
		}
	}
}

// reapOrphans ends the workers of a master that died: they would keep
// serving an old configuration and hold the listening sockets the next
// master needs. They share the master's process group (Setpgid above).
func (p *nginxProcess) reapOrphans() {
	group := -p.pid()
	if syscall.Kill(group, syscall.SIGQUIT) != nil {
		return // nobody left
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(group, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(group, syscall.SIGKILL)
}

// testConfig runs nginx -t on the configuration in dir (relative to the
// prefix) and returns NGINX's complaint when it fails: the error, and the
// whole output to trace it to its source.
func testConfig(bin, prefix, dir string) (string, error) {
	cmd := exec.Command(bin, "-t", "-q", "-p", prefix+"/", "-c", filepath.Join(dir, "nginx.conf"), "-e", "stderr")
	cmd.Dir = prefix
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		text := strings.TrimSpace(out.String())
		return text, fmt.Errorf("nginx -t: %w: %s", err, text)
	}
	return "", nil
}

// forwardLog turns NGINX's error log lines into structured log entries.
func forwardLog(r io.Reader, log *zap.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "[emerg]"), strings.Contains(line, "[alert]"), strings.Contains(line, "[crit]"), strings.Contains(line, "[error]"):
			log.Error(line)
		case strings.Contains(line, "[warn]"):
			log.Warn(line)
		default:
			log.Debug(line)
		}
	}
}

// writeConfig writes files into a fresh dir below prefix. A file equal to
// the live one is hard-linked from the live configuration instead of
// written: with thousands of servers, a change to one writes one file.
func writeConfig(prefix, dir string, files, live map[string]string) error {
	root := filepath.Join(prefix, dir)
	liveRoot := filepath.Join(prefix, ConfDir)
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	made := map[string]bool{}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if !strings.HasPrefix(path, root+string(filepath.Separator)) {
			return fmt.Errorf("file %q escapes the configuration directory", name)
		}
		if parent := filepath.Dir(path); !made[parent] {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			made[parent] = true
		}
		if old, ok := live[name]; ok && old == content {
			if os.Link(filepath.Join(liveRoot, filepath.FromSlash(name)), path) == nil {
				continue
			}
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	// servers/*.conf must match at least an empty directory.
	return os.MkdirAll(filepath.Join(root, "servers"), 0o755)
}

// swapConfig makes the tested candidate the live configuration. NGINX reads
// it only when started or reloaded, which happens after the swap.
func swapConfig(prefix string) error {
	live, next, old := filepath.Join(prefix, ConfDir), filepath.Join(prefix, NextConfDir), filepath.Join(prefix, OldConfDir)
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(live, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(next, live); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
