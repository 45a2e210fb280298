package nginx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestParentOf reads parents from /proc, as ReloadConfirmed does to see
// the master's new workers.
func TestParentOf(t *testing.T) {
	if got := parentOf(os.Getpid()); got != os.Getppid() {
		t.Fatalf("parentOf(self) = %d, want %d", got, os.Getppid())
	}
	// A child whose name (comm) holds spaces and parentheses.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "x) 1 (y")
	if err := os.WriteFile(odd, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := parentOf(cmd.Process.Pid); got != os.Getpid() {
		t.Fatalf("parentOf(child) = %d, want %d", got, os.Getpid())
	}
	if parentOf(1<<30) != 0 {
		t.Fatal("a pid that does not exist has a parent")
	}
}
