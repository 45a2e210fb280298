package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/stages/renderer"
)

// TestPassthroughModule: --enable-ssl-passthrough without the stream njs
// module is an error that names the Debian package, not a configuration
// NGINX refuses later.
func TestPassthroughModule(t *testing.T) {
	dir := t.TempDir()
	if err := passthroughModule(dir); err == nil || !strings.Contains(err.Error(), "libnginx-mod-stream-js") {
		t.Fatalf("missing module: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, renderer.StreamJSModule), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := passthroughModule(dir); err != nil {
		t.Fatalf("module present: %v", err)
	}
}
