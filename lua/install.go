package lua

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Install writes the embedded modules below prefix/lua, where nginx.conf's
// lua_package_path ("$prefix/lua/?.lua") finds them. Each file is written
// to a temporary name and renamed, so a running NGINX never reads half a file.
func Install(prefix string) error {
	return fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(prefix, "lua", path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("install lua: %w", err)
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("install lua: %w", err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("install lua: %w", err)
		}
		return nil
	})
}
