package nginx

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPreparePrefix(t *testing.T) {
	prefix := t.TempDir()
	for range 2 { // idempotent: the second run keeps the certificate
		if err := PreparePrefix(prefix); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{ConfDir, SSLDir, LogsDir, TmpDir} {
		if info, err := os.Stat(filepath.Join(prefix, dir)); err != nil || !info.IsDir() {
			t.Errorf("%s: %v", dir, err)
		}
	}
	ssl := filepath.Join(prefix, SSLDir)
	if _, err := tls.LoadX509KeyPair(filepath.Join(ssl, "default.crt"), filepath.Join(ssl, "default.key")); err != nil {
		t.Errorf("default certificate: %v", err)
	}
	if info, err := os.Stat(filepath.Join(ssl, "default.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("default key mode: %v %v", info.Mode(), err)
	}
}

func TestWriteAndSwapConfig(t *testing.T) {
	prefix := t.TempDir()
	live := map[string]string{MainFile: "events {}\n", "servers/a.conf": "# a\n"}
	if err := WriteConfig(prefix, NextConfDir, live, nil); err != nil {
		t.Fatal(err)
	}
	if err := SwapConfig(prefix); err != nil {
		t.Fatal(err)
	}
	next := map[string]string{MainFile: "events {}\n", "servers/a.conf": "# a, changed\n", "servers/b.conf": "# b\n"}
	if err := WriteConfig(prefix, NextConfDir, next, live); err != nil {
		t.Fatal(err)
	}
	// An unchanged file is a hard link to the live one, not a new copy.
	a, _ := os.Stat(filepath.Join(prefix, ConfDir, MainFile))
	b, _ := os.Stat(filepath.Join(prefix, NextConfDir, MainFile))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Errorf("unchanged %s was not linked from the live configuration", MainFile)
	}
	if err := SwapConfig(prefix); err != nil {
		t.Fatal(err)
	}
	for name, want := range next {
		if got, err := os.ReadFile(filepath.Join(prefix, ConfDir, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
	for _, gone := range []string{NextConfDir, OldConfDir} {
		if _, err := os.Stat(filepath.Join(prefix, gone)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", gone, err)
		}
	}
	if err := WriteConfig(prefix, NextConfDir, map[string]string{"../escape.conf": "x"}, nil); err == nil {
		t.Error("a file outside the configuration directory was written")
	}
}

// TestWriteConfigKeepsKeysPrivate: a key file (the TLS session ticket key,
// binary; a backend client key) is written byte for byte and readable by
// its owner only; other files by everyone (workers read htpasswd files).
func TestWriteConfigKeepsKeysPrivate(t *testing.T) {
	prefix := t.TempDir()
	ticket := string([]byte{0x00, 0xff, 0xfe, '\n', 0x80, '@'})
	files := map[string]string{"auth/ssl-session-ticket.key": ticket, "auth/client.key.pem": "PEM\n", "auth/users.htpasswd": "u:h\n"}
	if err := WriteConfig(prefix, NextConfDir, files, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"auth/ssl-session-ticket.key": 0o600, "auth/client.key.pem": 0o600, "auth/users.htpasswd": 0o644} {
		path := filepath.Join(prefix, NextConfDir, name)
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, info.Mode().Perm(), err, want)
		}
		if got, _ := os.ReadFile(path); string(got) != files[name] {
			t.Errorf("%s = %q, want %q", name, got, files[name])
		}
	}
}

// TestConfigTimesOut: an nginx -t that hangs is killed after the bound and
// reported as ErrTestTimeout, with its output so far.
func TestConfigTimesOut(t *testing.T) {
	dir := t.TempDir()
	hung := filepath.Join(dir, "nginx")
	if err := os.WriteFile(hung, []byte("#!/bin/sh\necho testing\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := testConfig(context.Background(), hung, dir, ConfDir, 300*time.Millisecond)
	if !errors.Is(err, ErrTestTimeout) || out != "testing" {
		t.Fatalf("got %q, %v; want the output and ErrTestTimeout", out, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}
