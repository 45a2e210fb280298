package main

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"switchyard.dev/switchyard/bus"
)

// TestRenderArchiveJoinsSplitFiles prints a server file the renderer
// published in parts as the one file the applier writes.
func TestRenderArchiveJoinsSplitFiles(t *testing.T) {
	const path = "servers/big.conf"
	content := strings.Repeat("location = /a { }\n", bus.FilePartSize/8)
	head, parts := bus.SplitFile(path, content)
	entries := map[string][]byte{}
	put := func(key string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		entries[key] = data
	}
	put(bus.Key(bus.KindFile, path), head)
	for _, p := range parts {
		put(bus.FilePartKey(path, p.Index), p)
	}
	put(bus.Key(bus.KindFile, "nginx.conf"), bus.RenderedFile{Path: "nginx.conf", Content: "main\n"})
	out, err := renderArchive(entries)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range txtar.Parse(out).Files {
		files[f.Name] = string(f.Data)
	}
	if len(parts) < 2 || files[path] != content || files["nginx.conf"] != "main\n" {
		t.Fatalf("%d parts; archive files: %d bytes of %s, nginx.conf %q", len(parts), len(files[path]), path, files["nginx.conf"])
	}
}
