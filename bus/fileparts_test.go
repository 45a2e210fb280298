package bus

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSplitFileJoins splits files of every shape and joins them back
// through the assembler, as the applier does; every part encodes within
// the bus limit, even when JSON escapes each byte.
func TestSplitFileJoins(t *testing.T) {
	cases := map[string]string{
		"small":            "server {}\n",
		"lines":            strings.Repeat("location /a { proxy_pass http://x; }\n", 20_000),
		"one long line":    strings.Repeat("x", 3*FilePartSize+7),
		"multibyte":        strings.Repeat("é€😀", FilePartSize/3),
		"escaped":          strings.Repeat("<&>", FilePartSize),
		"exactly one part": strings.Repeat("y", FilePartSize),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			head, parts := SplitFile("servers/a.conf", content)
			if (len(content) > FilePartSize) != (len(parts) > 0) || head.Parts != len(parts) {
				t.Fatalf("%d bytes gave %d parts (head says %d)", len(content), len(parts), head.Parts)
			}
			a := NewFileAssembler()
			data, _ := json.Marshal(head)
			if len(data) > MaxValue {
				t.Fatalf("head is %d bytes", len(data))
			}
			if _, err := a.Update(Key(KindFile, head.Path), data, true); err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				data, _ := json.Marshal(p)
				if len(data) > MaxValue {
					t.Fatalf("part %d is %d bytes encoded", p.Index, len(data))
				}
				if isPart, err := a.Update(FilePartKey(p.Path, p.Index), data, true); !isPart || err != nil {
					t.Fatalf("part %d: %v %v", p.Index, isPart, err)
				}
			}
			got, joined := "", false
			a.Assemble(func(_, c string, err error) {
				if err != nil {
					t.Fatal(err)
				}
				got, joined = c, true
			})
			if len(parts) == 0 {
				if joined {
					t.Fatal("a file in one piece was joined")
				}
				return
			}
			if got != content {
				t.Fatalf("joined %d bytes, want %d", len(got), len(content))
			}
		})
	}
}

// TestFileAssemblerMissingPart reports a split file whose parts are not
// all there, and joins it once they are.
func TestFileAssemblerMissingPart(t *testing.T) {
	content := strings.Repeat("line\n", FilePartSize/4) // 1.25 parts: two
	head, parts := SplitFile("f", content)
	a := NewFileAssembler()
	data, _ := json.Marshal(head)
	_, _ = a.Update(Key(KindFile, "f"), data, true)
	p0, _ := json.Marshal(parts[0])
	_, _ = a.Update(FilePartKey("f", 0), p0, true)
	var gotErr error
	a.Assemble(func(_, _ string, err error) { gotErr = err })
	if gotErr == nil || !strings.Contains(gotErr.Error(), "part 1 of 2") {
		t.Fatalf("missing part not reported: %v", gotErr)
	}
	p1, _ := json.Marshal(parts[1])
	_, _ = a.Update(FilePartKey("f", 1), p1, true)
	var got string
	a.Assemble(func(_, c string, err error) { got, gotErr = c, err })
	if gotErr != nil || got != content {
		t.Fatalf("joined %d bytes, %v", len(got), gotErr)
	}
}

// FuzzSplitFile splits any text (repeated to cross the part size) and joins
// it back: the same bytes, and every part within the bus limit once
// encoded. (Rendered files are text: JSON would replace invalid UTF-8 in a
// file sent whole just the same.)
func FuzzSplitFile(f *testing.F) {
	f.Add("location / {}\n", 3)
	f.Add("é\n<>&", 50_000)
	f.Add("😀", 70_000)
	f.Fuzz(func(t *testing.T, unit string, times int) {
		if unit == "" || times < 1 || len(unit)*times > 4*FilePartSize || !utf8.ValidString(unit) {
			return
		}
		content := strings.Repeat(unit, times)
		head, parts := SplitFile("f", content)
		a := NewFileAssembler()
		data, _ := json.Marshal(head)
		_, _ = a.Update(Key(KindFile, "f"), data, true)
		for _, p := range parts {
			data, _ := json.Marshal(p)
			if len(data) > MaxValue {
				t.Fatalf("part %d: %d bytes encoded", p.Index, len(data))
			}
			_, _ = a.Update(FilePartKey("f", p.Index), data, true)
		}
		got := content
		a.Assemble(func(_, c string, err error) {
			if err != nil {
				t.Fatal(err)
			}
			got = c
		})
		if got != content {
			t.Fatalf("joined %d bytes differ from the %d split", len(got), len(content))
		}
	})
}

// TestRenderedFileCarriesBytes: a file that is not UTF-8 (the TLS session
// ticket key) arrives byte for byte; a text file's JSON stays plain text.
func TestRenderedFileCarriesBytes(t *testing.T) {
	for _, content := range []string{"events {}\n", string([]byte{0x00, 0xff, 0xc3, 0x28, 'a', 0x80}), ""} {
		data, err := json.Marshal(RenderedFile{Path: "auth/x.key", Content: content})
		if err != nil {
			t.Fatal(err)
		}
		var got RenderedFile
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Content != content || got.Path != "auth/x.key" {
			t.Errorf("%q came back as %q (%s)", content, got.Content, data)
		}
		if utf8.ValidString(content) && strings.Contains(string(data), "contentBase64") {
			t.Errorf("text %q was sent as base64: %s", content, data)
		}
	}
}

// TestDecodeTicketKey: 48 or 80 bytes of standard base64, line breaks
// skipped; anything else is refused without the value in the error.
func TestDecodeTicketKey(t *testing.T) {
	key80 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 80))
	for _, tc := range []struct {
		value string
		size  int // 0: refused
	}{
		{base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 48)), 48},
		{key80, 80},
		{key80[:64] + "\n" + key80[64:], 80},
		{base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), 0},
		{base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 80)), 0},
		{base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 48)), 0},
		{"not-a-key!", 0},
	} {
		key, err := DecodeTicketKey(tc.value)
		if tc.size == 0 {
			if err == nil {
				t.Errorf("%q accepted", tc.value)
			} else if strings.Contains(err.Error(), tc.value) {
				t.Errorf("the error repeats the value: %v", err)
			}
			continue
		}
		if err != nil || len(key) != tc.size {
			t.Errorf("%q: %d bytes, %v; want %d", tc.value, len(key), err, tc.size)
		}
	}
}
