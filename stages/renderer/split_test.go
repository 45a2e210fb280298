package renderer

import (
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestFileSplitter checks the keys the renderer publishes for a server file
// as it grows past one message, shrinks, and goes.
func TestFileSplitter(t *testing.T) {
	const path = "servers/big.example.com.conf"
	key := fileKey(path)
	s := newFileSplitter()
	file := func(n int) *bus.Output {
		return &bus.Output{Values: map[string]any{key: bus.RenderedFile{Path: path, Content: strings.Repeat("location /a { }\n", n)}}}
	}
	partKeys := func(out *bus.Output) (keys []string) {
		for k := range out.Values {
			if strings.HasPrefix(k, bus.KindFilePart+".") {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}

	big := file(3 * bus.FilePartSize / 16)
	s.split(big)
	if head := big.Values[key].(bus.RenderedFile); head.Parts != 3 || head.Content != "" || len(partKeys(big)) != 3 {
		t.Fatalf("a file of three parts: head %+v, parts %v", head.Parts, partKeys(big))
	}
	smaller := file(bus.FilePartSize / 8)
	s.split(smaller)
	if want := []string{bus.FilePartKey(path, 2)}; !slices.Equal(smaller.Deletes, want) || len(partKeys(smaller)) != 2 {
		t.Fatalf("shrunk to two parts: deletes %v, parts %v", smaller.Deletes, partKeys(smaller))
	}
	gone := &bus.Output{Deletes: []string{key}}
	s.split(gone)
	if want := []string{key, bus.FilePartKey(path, 0), bus.FilePartKey(path, 1)}; !slices.Equal(gone.Deletes, want) {
		t.Fatalf("deleted: %v, want %v", gone.Deletes, want)
	}
	small := file(1)
	s.split(small)
	if len(small.Deletes) != 0 || small.Values[key].(bus.RenderedFile).Parts != 0 {
		t.Fatalf("a small file: %+v", small)
	}
}
