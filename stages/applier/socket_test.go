package applier_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// connectEnv names the socket the helper process below connects to.
const connectEnv = "SWITCHYARD_TEST_CONNECT_SOCKET"

// TestConnectHelper is not a test: run as another user by
// expectSocketPrivate, it tries to connect to the control socket and
// exits 0 only if it could.
func TestConnectHelper(t *testing.T) {
	socket := os.Getenv(connectEnv)
	if socket == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Logf("connect: %v", err)
		os.Exit(3)
	}
	c.Close()
	os.Exit(0)
}

// expectSocketPrivate checks that only the controller's user may use the
// control socket: the socket is 0600 in a 0700 directory of ours, and, when
// the test runs as root, a process of the NGINX worker user cannot connect.
func (r *rig) expectSocketPrivate(t *testing.T) {
	t.Helper()
	for path, want := range map[string]os.FileMode{r.socket: 0o600, filepath.Dir(r.socket): 0o700} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s is mode %#o, want %#o", path, got, want)
		}
		if uid := info.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
			t.Errorf("%s belongs to uid %d, want %d", path, uid, os.Geteuid())
		}
	}
	if os.Geteuid() != 0 {
		return // no other user to become
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The test binary's own directory is private: run a copy nobody may execute.
	helper := filepath.Join(harness.StateDir(t), "helper")
	copyExecutable(t, os.Args[0], helper)
	cmd := exec.Command(helper, "-test.run", "^TestConnectHelper$")
	cmd.Env = append(os.Environ(), connectEnv+"="+r.socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("user nobody connected to the control socket %s", r.socket)
	case !asExit(err, &exit) || exit.ExitCode() != 3:
		t.Fatalf("helper as nobody did not run as expected: %v\n%s", err, out)
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
