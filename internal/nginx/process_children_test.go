package nginx

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestChildPIDs lists a child this process starts, as ReloadConfirmed
// lists the master's workers, and nothing for a pid that does not exist.
func TestChildPIDs(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if kids := ChildPIDs(os.Getpid()); !slices.Contains(kids, cmd.Process.Pid) {
		t.Fatalf("children %v lack %d", kids, cmd.Process.Pid)
	}
	if kids := ChildPIDs(1 << 30); len(kids) != 0 {
		t.Fatalf("a pid that does not exist has children %v", kids)
	}
}
