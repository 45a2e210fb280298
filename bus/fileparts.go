package bus

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A file larger than one message (a host with thousands of paths) is
// published as numbered parts in the same generation as its head, and the
// consumer joins them: no legitimate file is ever over the bus limit.

// FilePartSize bounds the content of one part. JSON may escape a byte into
// six ("<" becomes \u003c), so even the worst part stays under MaxValue.
const FilePartSize = 128 << 10

// FilePart is one part of a split file.
type FilePart struct {
	Path    string `json:"path"`
	Index   int    `json:"index"`
	Content string `json:"content"`
}

// FilePartKey is the table key of part i of the file at path.
func FilePartKey(path string, i int) string {
	return Key(KindFilePart, path, strconv.Itoa(i))
}

// SplitFile returns what to publish for a file: its head, and its parts
// when it is larger than FilePartSize (none otherwise). Parts end at a line
// break where there is one, and never inside a UTF-8 sequence, so that
// each part encodes as it is.
func SplitFile(path, content string) (RenderedFile, []FilePart) {
	if len(content) <= FilePartSize {
		return RenderedFile{Path: path, Content: content}, nil
	}
	var parts []FilePart
	for len(content) > 0 {
		n := min(len(content), FilePartSize)
		if n < len(content) {
			if nl := strings.LastIndexByte(content[:n], '\n'); nl > 0 {
				n = nl + 1
			} else {
				for n > 0 && !utf8.RuneStart(content[n]) {
					n--
				}
			}
		}
		parts = append(parts, FilePart{Path: path, Index: len(parts), Content: content[:n]})
		content = content[n:]
	}
	return RenderedFile{Path: path, Parts: len(parts)}, parts
}

// FileAssembler joins split files on the consumer side. It keeps the
// parts it has seen and the heads that name parts; Update feeds it each
// key of a snapshot and Assemble joins the files those keys touched.
type FileAssembler struct {
	heads   map[string]int            // path → parts of a split file
	parts   map[string]map[int]string // path → index → content
	touched map[string]bool
}

// NewFileAssembler returns an empty assembler.
func NewFileAssembler() *FileAssembler {
	return &FileAssembler{heads: map[string]int{}, parts: map[string]map[int]string{}, touched: map[string]bool{}}
}

// Update takes one key of the renderer's table (data nil when deleted).
// It reports whether the key was a part, which the caller need not handle;
// for a file head it notes whether the file is split, and the caller still
// handles the head.
func (a *FileAssembler) Update(key string, data []byte, present bool) (isPart bool, err error) {
	kind, parts, err := SplitKey(key)
	if err != nil {
		return false, err
	}
	switch {
	case kind == KindFilePart && len(parts) == 2:
		return true, a.updatePart(key, parts, data, present)
	case kind == KindFile && len(parts) == 1:
		a.touched[parts[0]] = true
		delete(a.heads, parts[0])
		if present {
			var f RenderedFile
			if err := json.Unmarshal(data, &f); err == nil && f.Parts > 0 {
				a.heads[parts[0]] = f.Parts
			}
		}
	}
	return false, nil
}

func (a *FileAssembler) updatePart(key string, parts []string, data []byte, present bool) error {
	path := parts[0]
	i, err := strconv.Atoi(parts[1])
	if err != nil || i < 0 {
		return fmt.Errorf("renderer key %q: bad part number", key)
	}
	a.touched[path] = true
	if !present {
		delete(a.parts[path], i)
		if len(a.parts[path]) == 0 {
			delete(a.parts, path)
		}
		return nil
	}
	var p FilePart
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	if a.parts[path] == nil {
		a.parts[path] = map[int]string{}
	}
	a.parts[path][i] = p.Content
	return nil
}

// Assemble calls join with each split file touched since the last call,
// sorted by path, with its content, or with an error when a part is
// missing.
func (a *FileAssembler) Assemble(join func(path, content string, err error)) {
	for _, path := range slices.Sorted(maps.Keys(a.touched)) {
		n, split := a.heads[path]
		if !split {
			continue
		}
		var b strings.Builder
		var err error
		for i := range n {
			part, ok := a.parts[path][i]
			if !ok {
				err = fmt.Errorf("file %s: part %d of %d is missing", path, i, n)
				break
			}
			b.WriteString(part)
		}
		join(path, b.String(), err)
	}
	clear(a.touched)
}
