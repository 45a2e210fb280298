package nginx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// TestTimeout bounds one nginx -t. At 10,000 server blocks a test
// legitimately takes about 15 s on two cores, more under load; one that
// takes minutes is hung (a stuck resolver, a blocked file system), and the
// applier must get on with keeping the last good configuration.
const TestTimeout = 2 * time.Minute

// ErrTestTimeout is the error of an nginx -t that did not finish within
// TestTimeout.
var ErrTestTimeout = errors.New("nginx -t did not finish in time")

// TestConfig runs nginx -t on the configuration in dir (relative to the
// prefix) and returns NGINX's complaint when it fails: the error, and the
// whole output to trace it to its source. It gives up when ctx ends or
// after TestTimeout (ErrTestTimeout).
func TestConfig(ctx context.Context, bin, prefix, dir string) (string, error) {
	return testConfig(ctx, bin, prefix, dir, TestTimeout)
}

func testConfig(ctx context.Context, bin, prefix, dir string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-t", "-q", "-p", prefix+"/", "-c", filepath.Join(dir, MainFile), "-e", "stderr")
	cmd.Dir = prefix
	// Once killed, wait no longer for a child that holds the output pipe.
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		text := strings.TrimSpace(out.String())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return text, fmt.Errorf("%w (%s): %s", ErrTestTimeout, timeout, text)
		}
		if ctx.Err() != nil {
			return text, fmt.Errorf("nginx -t: %w", ctx.Err())
		}
		return text, fmt.Errorf("nginx -t: %w: %s", err, text)
	}
	return "", nil
}

// WriteConfig writes files into a fresh dir below prefix. A file equal to
// the live one is hard-linked from the live configuration instead of
// written: with thousands of servers, a change to one writes one file.
func WriteConfig(prefix, dir string, files, live map[string]string) error {
	root := filepath.Join(prefix, dir)
	liveRoot := filepath.Join(prefix, ConfDir)
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	made := map[string]bool{}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if !strings.HasPrefix(path, root+string(filepath.Separator)) {
			return fmt.Errorf("file %q escapes the configuration directory", name)
		}
		if parent := filepath.Dir(path); !made[parent] {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			made[parent] = true
		}
		if old, ok := live[name]; ok && old == content {
			if os.Link(filepath.Join(liveRoot, filepath.FromSlash(name)), path) == nil {
				continue
			}
		}
		if err := os.WriteFile(path, []byte(content), fileMode(name)); err != nil {
			return err
		}
	}
	// servers/*.conf must match at least an empty directory.
	return os.MkdirAll(filepath.Join(root, "servers"), 0o755)
}

// SwapConfig makes the tested candidate the live configuration. NGINX reads
// it only when started or reloaded, which happens after the swap.
func SwapConfig(prefix string) error {
	live, next, old := filepath.Join(prefix, ConfDir), filepath.Join(prefix, NextConfDir), filepath.Join(prefix, OldConfDir)
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(live, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(next, live); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// fileMode keeps private keys (backend client keys, the TLS session
// ticket key: the NGINX master reads them as root when it loads the
// configuration) readable by their owner only.
func fileMode(name string) os.FileMode {
	if strings.HasSuffix(name, ".key.pem") || strings.HasSuffix(name, ".key") {
		return 0o600
	}
	return 0o644
}
