package nginx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ControlDir is the directory below the prefix that holds the control
// socket. It is private to the controller's user (mode 0700): whoever can
// connect to the socket can replace every backend and certificate, and
// NGINX creates unix sockets world-writable. The workers, which may run as
// another user, never need the path: they accept on the listening socket
// the master opened for them.
const ControlDir = "control"

// SecureControlDir makes the directory of the control socket private to
// this process's user: created if missing, owned by us and mode 0700. The
// prefix itself must stay open to the workers, so a socket placed directly
// in it gets only the socket's own 0600 (see SecureControlSocket).
func SecureControlDir(prefix, socket string) error {
	dir := filepath.Dir(socket)
	if filepath.Clean(dir) == filepath.Clean(prefix) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("control socket directory %s is not a directory", dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		// Left by another user (a state dir reused across users): take it
		// back if we may, else refuse rather than share the socket.
		if err := os.Lchown(dir, os.Geteuid(), os.Getegid()); err != nil {
			return fmt.Errorf("control socket directory %s belongs to uid %d, not to us: %w", dir, st.Uid, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	return nil
}

// SecureControlSocket narrows the socket NGINX created (mode 0666) to its
// owner. The directory already keeps others out; this holds even when the
// socket was configured directly in the prefix.
func SecureControlSocket(socket string) error {
	err := os.Chmod(socket, 0o600)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("control socket: %w", err)
	}
	return err
}

// InternalDir is the directory below the prefix that holds the unix
// sockets NGINX connects to itself (TLS passthrough's). NGINX creates them
// world-writable, and a process that could connect could forge the PROXY
// header that carries the client's address: the directory is private to
// the workers' user (mode 0700), the master (root) enters it anyway.
const InternalDir = "internal"

// SecureInternalDir creates dir (mode 0700) and gives it to the workers'
// user w, or keeps it ours when the workers run as we do (w nil).
func SecureInternalDir(dir string, w *WorkerUser) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("internal socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("internal socket directory: %w", err)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if w != nil {
		uid, gid = w.uid, w.gid
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("internal socket directory: %w", err)
	}
	return nil
}
