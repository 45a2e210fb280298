// Package lockedstart starts child processes whose parent-death signal
// fires when this process dies, and only then.
package lockedstart

import (
	"os/exec"
	"runtime"
)

// Start starts cmd from an OS thread that lives until cmd exits, then
// calls exited with Wait's result. Linux sends a child its parent-death
// signal (SysProcAttr.Pdeathsig) when the thread that forked it ends, not
// the process (Go issue 27505); a goroutine may otherwise run on a thread
// the runtime later retires, and the child would be told its parent died
// while the parent still runs. Locked here, the signal comes exactly when
// this process dies, however it dies (kill -9, the OOM killer).
func Start(cmd *exec.Cmd, exited func(error)) error {
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
