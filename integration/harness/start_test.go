package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startHelperEnv makes this test binary, run again, the test process
// that TestStartedProcessDiesWithTheTest kills.
const startHelperEnv = "SWITCHYARD_HARNESS_START_HELPER"

// TestStartedProcessDiesWithTheTest: a process Start ran gets SIGTERM
// when the test process is killed (kill -9: no cleanup runs), instead of
// running on. The killed test process is this binary, run again.
func TestStartedProcessDiesWithTheTest(t *testing.T) {
	if os.Getenv(startHelperEnv) != "" {
		p := Start(t, "sleep", "300")
		fmt.Printf("child %d\n", p.Cmd.Process.Pid)
		time.Sleep(5 * time.Minute) // until killed
		return
	}
	helper := exec.Command(os.Args[0], "-test.run", "^TestStartedProcessDiesWithTheTest$")
	helper.Env = append(os.Environ(), startHelperEnv+"=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper test process said nothing: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "child ")))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	if !processRunning(child) {
		t.Fatalf("child %d is not running before the test process is killed", child)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	for deadline := time.Now().Add(10 * time.Second); processRunning(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d still runs 10 s after its test process was killed", child)
		}
	}
}
