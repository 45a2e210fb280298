package kube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Netns is a network namespace with a veth pair, for backends whose addresses
// must be accepted in EndpointSlices (the API server rejects 127.0.0.0/8).
// The pair is a /30 from 10.250.0.0/16: HostAddr (.1) on the host side, Addr
// (.2) inside the namespace, which routes everything else via HostAddr.
// Tests send traffic only to loopback and to these addresses.
type Netns struct {
	// Name is the namespace's name (ip netns list), sy-XXXXXX.
	Name string
	// Addr is the namespace's address, e.g. 10.250.3.2 (prefix length 30).
	Addr string
	// HostAddr is the host side of the veth pair, e.g. 10.250.3.1 (prefix
	// length 30).
	HostAddr string
	// HostLink and Link are the veth interfaces on the host and inside the
	// namespace.
	HostLink, Link string
}

// netnsLock serializes address allocation between test processes.
const netnsLock = "switchyard-netns.lock"

// NewNetns creates a network namespace (ip netns add sy-…) joined to the host
// by a veth pair with a free /30 from 10.250.0.0/16, with both ends and the
// namespace's lo up. The namespace and the pair are removed at cleanup.
//
// It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2: without them
// it skips the test, or fails it when RequireEnv is set.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFatal(t, "kube: ip not found (apt-get install iproute2)")
	}
	if os.Geteuid() != 0 {
		skipOrFatal(t, "kube: network namespaces need root")
	}
	suffix := randomHex(3)
	n := &Netns{
		Name:     "sy-" + suffix,
		HostLink: "syh-" + suffix,
		Link:     "syn-" + suffix,
	}
	if out, err := ipCmd("netns", "add", n.Name); err != nil {
		skipOrFatal(t, "kube: ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Deleting one end of the pair deletes both at once; deleting the
		// namespace alone would remove the host end only later, in the
		// background.
		if _, err := net.InterfaceByName(n.HostLink); err == nil {
			if out, err := ipCmd("link", "del", n.HostLink); err != nil && !strings.Contains(string(out), "Cannot find device") {
				t.Errorf("kube: ip link del %s: %v: %s", n.HostLink, err, out)
			}
		}
		if out, err := ipCmd("netns", "del", n.Name); err != nil {
			t.Errorf("kube: ip netns del %s: %v: %s", n.Name, err, out)
		}
	})
	if err := n.setup(); err != nil {
		t.Fatalf("kube: network namespace %s: %v", n.Name, err)
	}
	t.Logf("kube: network namespace %s: %s (host side %s/30)", n.Name, n.Addr, n.HostAddr)
	return n
}

func (n *Netns) setup() error {
	unlock, err := lockFile(filepath.Join(os.TempDir(), netnsLock))
	if err != nil {
		return err
	}
	defer unlock()
	subnet, err := freeSubnet()
	if err != nil {
		return err
	}
	host, ns := subnet.To4(), make(net.IP, 4)
	copy(ns, host)
	host[3]++
	ns[3] += 2
	n.HostAddr, n.Addr = host.String(), ns.String()
	steps := [][]string{
		{"link", "add", n.HostLink, "type", "veth", "peer", "name", n.Link, "netns", n.Name},
		{"addr", "add", n.HostAddr + "/30", "dev", n.HostLink},
		{"link", "set", n.HostLink, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
		{"-n", n.Name, "addr", "add", n.Addr + "/30", "dev", n.Link},
		{"-n", n.Name, "link", "set", n.Link, "up"},
		{"-n", n.Name, "route", "add", "default", "via", n.HostAddr},
	}
	for _, args := range steps {
		if out, err := ipCmd(args...); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Start runs a command inside the namespace (ip netns exec NAME bin args...),
// with its output in a log file that is printed if the test fails. The command
// is stopped at cleanup (SIGTERM, then SIGKILL after 5s) unless it has already
// been waited for; a caller that calls Wait must do so before the test ends.
func (n *Netns) Start(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	logf, err := os.CreateTemp("", "switchyard-netns-*.log")
	if err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs the command itself, so the PID is the command's.
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.Remove(logf.Name())
		t.Fatalf("kube: start %s in %s: %v", bin, n.Name, err)
	}
	t.Cleanup(func() {
		defer os.Remove(logf.Name())
		defer logf.Close()
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil && len(b) > 0 {
				t.Logf("kube: output of %s in %s:\n%s", bin, n.Name, tail(string(b), 4000))
			}
		}
	})
	return cmd
}

func ipCmd(args ...string) ([]byte, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return out, err
}

func randomHex(nbytes int) string {
	b := make([]byte, nbytes)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// freeSubnet picks a random /30 in 10.250.0.0/16 that no host interface uses.
func freeSubnet() (net.IP, error) {
	_, pool, _ := net.ParseCIDR("10.250.0.0/16")
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP.To4()
		if ip == nil {
			continue
		}
		// A wider host network that covers the pool does not matter: the
		// /30 routes are more specific.
		if pool.Contains(ip) {
			used[(int(ip[2])<<8|int(ip[3]))>>2] = true
		}
	}
	const subnets = 1 << 14 // /30s in a /16
	for i := 0; i < 1000; i++ {
		r, err := rand.Int(rand.Reader, big.NewInt(subnets-1))
		if err != nil {
			return nil, err
		}
		k := int(r.Int64()) + 1 // never 10.250.0.0/30
		if used[k] {
			continue
		}
		return net.IPv4(10, 250, byte(k>>6), byte(k&63)<<2), nil
	}
	return nil, fmt.Errorf("no free /30 in %s", pool)
}

// lockFile takes an exclusive flock on path.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
