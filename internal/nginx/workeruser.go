package nginx

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// WorkerUser is the unprivileged account NGINX workers run as when
// Switchyard runs as root. Run as another user, workers keep that user and
// nothing needs granting.
type WorkerUser struct {
	Name, Group string
	uid, gid    int
}

// LookupWorkerUser resolves a user name and its primary group.
func LookupWorkerUser(name string) (WorkerUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return WorkerUser{}, fmt.Errorf("nginx worker user: %w", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return WorkerUser{}, fmt.Errorf("nginx worker group of %s: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return WorkerUser{Name: u.Username, Group: g.Name, uid: uid, gid: gid}, nil
}

// GrantWorkerAccess lets the workers write their temporary files (request
// bodies larger than the buffer, proxied responses) and checks that they
// can reach them: every directory above the prefix must be searchable by
// others, or NGINX fails on the first large request instead of at start.
func GrantWorkerAccess(prefix string, w WorkerUser) error {
	if err := os.Chmod(prefix, 0o755); err != nil {
		return err
	}
	for dir := filepath.Dir(prefix); ; dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("nginx workers run as %s and cannot reach %s: %s is mode %#o; choose a --state-dir whose parents others may enter",
				w.Name, prefix, dir, info.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	tmp := filepath.Join(prefix, TmpDir)
	return filepath.WalkDir(tmp, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, w.uid, w.gid)
	})
}
