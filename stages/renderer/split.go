package renderer

import (
	"slices"

	"switchyard.dev/switchyard/bus"
)

// fileSplitter publishes files too large for one bus message as parts
// (bus.SplitFile), and deletes the parts a file no longer has. It remembers
// how many parts each file was last published with.
type fileSplitter struct {
	parts map[string]int // path → parts published
}

func newFileSplitter() *fileSplitter { return &fileSplitter{parts: map[string]int{}} }

// split rewrites out's files in place. A whole-table output starts over:
// the writer deletes every key it does not hold, old parts included.
func (s *fileSplitter) split(out *bus.Output) {
	if out.Full {
		clear(s.parts)
	}
	var files []string
	for key, v := range out.Values {
		if _, ok := v.(bus.RenderedFile); ok {
			files = append(files, key)
		}
	}
	for _, key := range files {
		f := out.Values[key].(bus.RenderedFile)
		head, parts := bus.SplitFile(f.Path, f.Content)
		out.Values[key] = head
		for _, p := range parts {
			out.Values[bus.FilePartKey(f.Path, p.Index)] = p
		}
		s.drop(out, f.Path, len(parts))
	}
	for _, key := range out.Deletes {
		if kind, parts, err := bus.SplitKey(key); err == nil && kind == bus.KindFile && len(parts) == 1 {
			s.drop(out, parts[0], 0)
		}
	}
	slices.Sort(out.Deletes)
}

// drop deletes the parts of path from index keep on, and remembers keep.
func (s *fileSplitter) drop(out *bus.Output, path string, keep int) {
	for i := keep; i < s.parts[path]; i++ {
		out.Deletes = append(out.Deletes, bus.FilePartKey(path, i))
	}
	if keep == 0 {
		delete(s.parts, path)
	} else {
		s.parts[path] = keep
	}
}
