package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveStaleBinaries: the binary directory of a process that has
// exited is removed, the one of a live process is kept.
func TestRemoveStaleBinaries(t *testing.T) {
	live, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binDirPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(live) })
	// The largest pid Linux hands out is 2^22; above it no process lives.
	stale, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binDirPrefix, 1<<23))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "switchyard"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	removeStaleBinaries()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s of an exited process is still there: %v", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s of this process was removed: %v", live, err)
	}
}
