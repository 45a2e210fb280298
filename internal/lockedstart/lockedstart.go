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
// the process (Go issue 27505). The Go runtime ends a thread only when a
// goroutine locked to it ends, so a thread kept locked here for as long
// as the child runs, and unlocked after, gives the signal exactly when
// this process dies, however it dies (kill -9, the OOM killer).
func Start(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Unlocked, not left to end with this goroutine: the thread's end
		// would also signal every child forked from it before it was
		// locked here (a test's etcd, started by another goroutine that
		// ran on this thread, was killed so).
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}
