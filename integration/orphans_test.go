package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestKilledControllerLeavesNoOrphans: after kill -9 of `switchyard run`
// (what the OOM killer does), none of its plugin processes and no NGINX
// process survives: NGINX dies with its controller by design (a parent-death
// signal), so no NGINX keeps ports and memory that nobody will adopt. A
// controller restarted on the same state dir serves again, with exactly one
// NGINX master.
func TestKilledControllerLeavesNoOrphans(t *testing.T) {
	bin := harness.Binary(t)
	dir := t.TempDir()
	port := harness.StartEcho(t, bin, "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "services.yaml"), harness.ServiceYAML("default", "echo-a", port))
	harness.WriteFile(t, filepath.Join(dir, "ingress.yaml"), harness.IngressYAML("default", "web", "web.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	sy := harness.StartSwitchyard(t, dir)
	waitStatus(t, sy, "web.example.com", 200)

	children := harness.ChildPIDs(t, sy.Cmd.Process.Pid)
	var plugins int
	for _, pid := range children {
		if strings.Contains(cmdline(pid), " plugin ") {
			plugins++
		}
	}
	master := sy.MasterPID(t)
	workers := sy.WorkerPIDs(t)
	// The built-in plugins share one process.
	if plugins != 1 || !contains(children, master) {
		t.Fatalf("children of switchyard %v: %d plugins, nginx master %d among them: %v", children, plugins, master, contains(children, master))
	}

	if err := sy.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 10*time.Second, "switchyard to die", func() error {
		if !sy.Exited() {
			return fmt.Errorf("still running")
		}
		return nil
	})
	watched := append(append([]int{}, children...), workers...)
	t.Cleanup(func() {
		// Whatever survived a failure: these pids were recorded as ours.
		for _, pid := range watched {
			if running(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	harness.WaitFor(t, 60*time.Second, "every child of the killed switchyard to exit", func() error {
		var alive []string
		for _, pid := range watched {
			if running(pid) {
				alive = append(alive, fmt.Sprintf("%d (%s)", pid, cmdline(pid)))
			}
		}
		if len(alive) > 0 {
			return fmt.Errorf("still running: %s", strings.Join(alive, ", "))
		}
		return nil
	})
	if c, err := net.DialTimeout("tcp", sy.HTTPAddr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after its controller died", sy.HTTPAddr)
	}

	again := sy.Restart(t)
	waitStatus(t, again, "web.example.com", 200)
	// A worker the master has just forked shows the master's command line
	// until it renames itself, so a moment's second "master" is polled
	// away; an orphaned master from before the restart never goes.
	harness.WaitFor(t, 15*time.Second, "exactly one NGINX master with prefix "+sy.Prefix(), func() error {
		if masters := nginxMasters(sy.Prefix()); len(masters) != 1 {
			return fmt.Errorf("masters %v", masters)
		}
		return nil
	})
}

func waitStatus(t *testing.T, sy *harness.Switchyard, host string, want int) {
	t.Helper()
	harness.WaitFor(t, 30*time.Second, host+" served", func() error {
		r, err := sy.Get(host, "/")
		if err == nil && r.Status != want {
			err = fmt.Errorf("status %d, want %d", r.Status, want)
		}
		return err
	})
}

// running says whether pid is a live process (a zombie is not: it holds
// nothing but its entry, and its new parent reaps it).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
}

// nginxMasters lists the running NGINX masters started with prefix.
func nginxMasters(prefix string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !running(pid) {
			continue
		}
		line := cmdline(pid)
		if strings.HasPrefix(line, "nginx: master process") && strings.Contains(line, "-p "+prefix+"/ ") {
			out = append(out, pid)
		}
	}
	// A child of a master is a worker not yet renamed, not a master.
	return slices.DeleteFunc(out, func(pid int) bool { return slices.Contains(out, parentPID(pid)) })
}

// parentPID reads pid's parent from /proc (0 when it cannot).
func parentPID(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The parent follows the state, after the parenthesised command name.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func contains(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// TestPluginExitsWhenItsHostDies: a plugin whose host set no parent-death
// signal (a host process of another make, or one started by a shell) still
// exits once its parent is gone, instead of serving nobody forever.
func TestPluginExitsWhenItsHostDies(t *testing.T) {
	bin := harness.Binary(t)
	// The shell starts the plugin in the background and exits at once: the
	// plugin is handed to init, as after its host was killed.
	cmd := exec.Command("sh", "-c", `SWITCHYARD_PLUGIN_HOST_PID=$$ "$0" plugin canary >/dev/null 2>&1 & echo $!`, bin)
	cmd.Env = append(os.Environ(), "SWITCHYARD_ANNOTATION_PLUGIN=f3b1c2a4-annotations", "PLUGIN_PROTOCOL_VERSIONS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("plugin pid %q: %v", out, err)
	}
	t.Cleanup(func() {
		if running(pid) && strings.Contains(cmdline(pid), "plugin canary") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	harness.WaitFor(t, 30*time.Second, "the plugin whose parent died to exit", func() error {
		if running(pid) {
			return fmt.Errorf("plugin %d still running: %s", pid, cmdline(pid))
		}
		return nil
	})
}
