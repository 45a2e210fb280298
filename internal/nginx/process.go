package nginx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/lockedstart"
)

// Process is the NGINX master, a child of this process. Its command
// line names the prefix, so an operator can tell which state dir it serves.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the master exits
	err  error         // why it exited; read after done
	// emerg is the last [emerg] line NGINX logged (a reload that failed
	// says why there).
	emerg atomic.Pointer[string]
}

func nginxArgs(prefix string, extra ...string) []string {
	return append([]string{"-p", prefix + "/", "-c", filepath.Join(ConfDir, MainFile), "-e", "stderr"}, extra...)
}

// Start starts the master in the foreground (daemon off) and streams
// its log lines into the logger.
func Start(bin, prefix string, log *zap.Logger) (*Process, error) {
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
	p := &Process{cmd: cmd, done: make(chan struct{})}
	if err := lockedstart.Start(cmd, func(err error) { p.err = err; close(p.done) }); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	go forwardLog(stderr, log, func(line string) { p.emerg.Store(&line) })
	return p, nil
}

// StopLeftover ends an NGINX master that serves this prefix but is not
// ours: one an earlier controller left (killed before it could set up the
// parent-death signal, or a version without it). It would hold the ports,
// the new master could not bind them, and nobody would ever stop it. Only
// a master whose command line names this prefix is touched.
func StopLeftover(prefix string, log *zap.Logger) {
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

// Done is closed when the master exits; Err then says why.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is why the master exited, once Done is closed.
func (p *Process) Err() error { return p.err }

// PID is the master's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited says whether the master has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Reload asks the master to start new workers with the new configuration
// and to drain the old ones gracefully.
func (p *Process) Reload() error {
	if p.Exited() {
		return errors.New("nginx is not running")
	}
	return p.cmd.Process.Signal(syscall.SIGHUP)
}

// ReloadConfirmed reloads and waits until the master runs the new
// configuration: a new worker appears, and no worker of the old one still
// accepts connections. A reload the master refuses after nginx -t passed
// (a listen port another process holds, a file it cannot open) leaves the
// old workers and logs an [emerg] line: that line is the error. Past
// timeout the reload counts as failed too, unless a new worker appeared.
// Old workers that still accept after oldWorkersGrace do not fail it.
func (p *Process) ReloadConfirmed(ctx context.Context, timeout time.Duration) error {
	before := p.children()
	p.emerg.Store(nil)
	if err := p.Reload(); err != nil {
		return err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var graceOver <-chan time.Time // set once a new worker runs: the end of the wait for the old ones
	for {
		if graceOver == nil {
			for pid := range p.children() {
				if !before[pid] {
					graceOver = time.After(oldWorkersGrace)
					break
				}
			}
		}
		// With reuseport the listening sockets outlive a reload, and an
		// old worker accepts from them until it handles the master's
		// QUIT: a connection it takes meanwhile is served by the old
		// configuration. Done means the new one serves every connection.
		if graceOver != nil && !acceptingWorkers(before) {
			return nil
		}
		if graceOver != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-graceOver:
				return nil // the old workers are slow to stop; the reload happened
			case <-tick.C:
			}
			continue
		}
		if line := p.emerg.Load(); line != nil {
			return fmt.Errorf("nginx kept its previous configuration: %s", *line)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return errors.New("nginx exited during the reload")
		case <-deadline.C:
			return fmt.Errorf("nginx started no worker with the new configuration within %s", timeout)
		case <-tick.C:
		}
	}
}

// oldWorkersGrace bounds the wait for the old workers to stop accepting
// once the new ones run: they do within moments of the master's QUIT,
// which it sends 100 ms after starting the new workers.
const oldWorkersGrace = 5 * time.Second

// acceptingWorkers says whether any of pids is a worker that still takes
// connections. NGINX retitles a worker "worker process is shutting down"
// in the same step in which it closes its listening sockets, so a worker
// not titled so may still accept one.
func acceptingWorkers(pids map[int]bool) bool {
	for pid := range pids {
		title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // exited
		}
		t := string(title)
		if strings.HasPrefix(t, "nginx: worker process") && !strings.Contains(t, "shutting down") {
			return true
		}
	}
	return false
}

// children are the processes whose parent is the master (workers, cache
// manager and loader).
func (p *Process) children() map[int]bool {
	kids := map[int]bool{}
	for _, pid := range ChildPIDs(p.PID()) {
		kids[pid] = true
	}
	return kids
}

// ChildPIDs lists the children of pid, from the children files of its
// threads in /proc.
func ChildPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(field); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// Stop shuts NGINX down gracefully: SIGQUIT lets workers finish their
// requests (bounded by worker_shutdown_timeout); past grace it is
// terminated, then killed.
func (p *Process) Stop(grace time.Duration) {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGQUIT, grace}, {syscall.SIGTERM, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}}
	for _, s := range steps {
		if p.Exited() {
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

// ReapOrphans ends the workers of a master that died: they would keep
// serving an old configuration and hold the listening sockets the next
// master needs. They share the master's process group (Setpgid above).
func (p *Process) ReapOrphans() {
	group := -p.PID()
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

// forwardLog turns NGINX's error log lines into structured log entries.
func forwardLog(r io.Reader, log *zap.Logger, emerg func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "[emerg]"):
			emerg(line)
			log.Error(line)
		case strings.Contains(line, "[alert]"), strings.Contains(line, "[crit]"), strings.Contains(line, "[error]"):
			log.Error(line)
		case strings.Contains(line, "[warn]"):
			log.Warn(line)
		default:
			log.Debug(line)
		}
	}
}
