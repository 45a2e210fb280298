// Locating errors: the strict decoder and the YAML parser report a field
// path or a line in their own terms; this file turns those into a line of
// the manifest and a message in the schema's field names, by walking the
// k8s.io/api types with reflection. Nothing here ever returns text from
// the document (it may hold Secret data).

package manifest

import (
	"bytes"
	"encoding/base64"
	stdjson "encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	yamlLineRE = regexp.MustCompile(`line (\d+)`)
	dupKeyRE   = regexp.MustCompile(`line \d+: key ("(?:[^"\\]|\\.)*") already set in map`)
	// safeProblemRE matches the YAML parser's fixed problem descriptions
	// ("did not find expected ',' or '}'"). Messages that quote document
	// text (anchors, keys, values) do not match and are replaced.
	safeProblemRE = regexp.MustCompile(`^(?:[A-Za-z0-9 ,()<>.-]|'[^A-Za-z0-9'\s]')+$`)
)

// yamlError turns a YAML parser error into one that names the file and the
// line the parser reported (or the document start), without document text.
func yamlError(file string, doc document, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := doc.startLine
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		if n, err := strconv.Atoi(msg[m[2]:m[3]]); err == nil && n > 0 {
			line = doc.firstLine + min(n, lineCount(doc.text)) - 1
		}
	}
	problem := "invalid YAML"
	switch {
	case strings.HasPrefix(msg, "unmarshal errors:") && strings.Contains(msg, "already set in map"):
		problem = "duplicate key"
		// The parser names the value's line; a block value starts below
		// its key. Look back for the key (it is never printed).
		if m := dupKeyRE.FindStringSubmatch(msg); m != nil {
			if key, err := strconv.Unquote(m[1]); err == nil {
				lines := strings.Split(string(doc.text), "\n")
				for i := min(line-doc.firstLine, len(lines)-1); i >= 0; i-- {
					if findKey(lines[i:i+1], 0, key) == 0 {
						line = doc.firstLine + i
						break
					}
				}
			}
		}
	case strings.HasPrefix(msg, "line "):
		if _, p, ok := strings.Cut(msg, ": "); ok && safeProblemRE.MatchString(p) {
			problem = "invalid YAML: " + p
		}
	case safeProblemRE.MatchString(msg):
		problem = "invalid YAML: " + msg
	}
	return docError(file, max(line, 1), problem)
}

func lineCount(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return max(n, 1)
}

// typeErrorRE matches encoding/json's UnmarshalTypeError text (as forked by
// sigs.k8s.io/json): the JSON kind found, the field path and the Go type.
var typeErrorRE = regexp.MustCompile(`^json: cannot unmarshal (\w+)(?: \S+)? into Go struct field \w+\.(\S+) of type (\S+)$`)

// decodeErrorMessage explains a strict decoding error by the schema's field
// names and finds the line it is about and the field path. It never returns
// document text: a path element is shown only once the Go type proves it a
// schema field, and list indices are found by looking at raw (the document
// as JSON), never by quoting it.
func decodeErrorMessage(doc document, raw []byte, t reflect.Type, err error) (line int, field, msg string) {
	if se, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range se.Errors() {
			fe, ok := e.(interface{ FieldPath() string })
			if !ok {
				continue
			}
			elems := schemaPath(t, parseFieldPath(fe.FieldPath()))
			n, _ := walkSchema(t, elems)
			what := "unknown field"
			if strings.HasPrefix(e.Error(), "duplicate field") {
				what = "duplicate field"
			}
			if n > 0 {
				field = renderPath(elems[:n])
				what += " in " + field
			} else {
				what += " at the top level"
			}
			return locatePath(doc, elems), field, what
		}
		return doc.startLine, "", "strict decoding failed"
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		elems := schemaPath(t, parseFieldPath(m[2]))
		n, ft := walkSchema(t, elems)
		// encoding/json names no list index: find the item whose value is
		// of the kind it reported (within the schema's part of the path;
		// the rest is map keys, which are never shown).
		kind := m[1]
		if n < len(elems) {
			kind = ""
		}
		elems = append(withIndices(raw, elems[:n], kind), elems[n:]...)
		n, _ = walkSchema(t, elems)
		got := jsonKind(m[1])
		want := goTypeKind(m[3])
		if n == len(elems) && ft == reflect.TypeFor[intstr.IntOrString]() {
			want = "a number or a string"
		}
		msg = "wrong type"
		if n > 0 {
			field = renderPath(elems[:n])
			msg += " in " + field
		}
		switch {
		case got == "a number" && want == "a number":
			msg += ": number out of range"
		case want != "":
			msg += ": got " + got + ", want " + want
		default:
			msg += ": got " + got
		}
		return locatePath(doc, elems), field, msg
	}
	var b64 base64.CorruptInputError
	if errors.As(err, &b64) || strings.HasPrefix(err.Error(), "illegal base64 data at input byte ") {
		field = "data"
		if t == reflect.TypeFor[corev1.ConfigMap]() {
			field = "binaryData"
		}
		return locatePath(doc, parseFieldPath(field)), field, "a value in " + field + " is not valid base64"
	}
	return doc.startLine, "", "a value does not match the " + t.Name() + " schema"
}

// schemaPath drops from a decoder's field path the Go names of embedded
// structs that JSON inlines: encoding/json reports an Ingress rule's field
// as "spec.rules.IngressRuleValue.http", the document says "spec.rules.http".
func schemaPath(t reflect.Type, elems []pathElem) []pathElem {
	out := make([]pathElem, 0, len(elems))
	for _, e := range elems {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			t = t.Elem()
		}
		if e.index >= 0 {
			out = append(out, e)
			continue
		}
		if t != nil && t.Kind() == reflect.Struct {
			if _, ok := jsonField(t, e.name); !ok {
				if inline, ok := inlineField(t, e.name); ok {
					t = inline
					continue
				}
			}
		}
		out = append(out, e)
		if t != nil && t.Kind() == reflect.Struct {
			t, _ = jsonField(t, e.name)
		} else {
			t = nil
		}
	}
	return out
}

// inlineField returns the struct type of t's embedded, JSON-inlined field
// whose Go type is named name.
func inlineField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.Anonymous || tag != "" || f.Name != name {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return ft, true
		}
	}
	return nil, false
}

// withIndices puts list indices into a field path reported without them
// ("spec.rules.http.paths"): it follows the path through the document
// (raw, as JSON), trying each item of a list in turn, and takes the first
// where the path's end exists and, when kind is set ("string", "number",
// "bool", "array", "object"), holds a value of that kind. Without such an
// item it returns elems unchanged.
func withIndices(raw []byte, elems []pathElem, kind string) []pathElem {
	dec := stdjson.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return elems
	}
	var walk func(v any, rest, out []pathElem) []pathElem
	walk = func(v any, rest, out []pathElem) []pathElem {
		if len(rest) == 0 && (kind == "" || jsonKindOf(v) == kind) {
			return out
		}
		list, isList := v.([]any)
		if isList && (len(rest) == 0 || rest[0].index < 0) {
			for i, item := range list {
				if p := walk(item, rest, append(slices.Clip(out), pathElem{index: i})); p != nil {
					return p
				}
			}
			return nil
		}
		if len(rest) == 0 {
			return nil
		}
		e := rest[0]
		switch x := v.(type) {
		case map[string]any:
			if child, ok := x[e.name]; ok && e.index < 0 {
				return walk(child, rest[1:], append(slices.Clip(out), e))
			}
		case []any:
			if e.index < len(x) {
				return walk(x[e.index], rest[1:], append(slices.Clip(out), e))
			}
		}
		return nil
	}
	if p := walk(doc, elems, nil); p != nil {
		return p
	}
	return elems
}

// jsonKindOf names a decoded JSON value's kind as encoding/json's type
// errors do.
func jsonKindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case stdjson.Number, float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// jsonKind names the kind of JSON value in a type error.
func jsonKind(v string) string {
	switch v {
	case "string", "number":
		return "a " + v
	case "bool":
		return "a boolean"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "a value of another type"
}

// goTypeKind names, in JSON terms, the Go type a type error wanted; "" if
// it is not a plain one.
func goTypeKind(t string) string {
	switch {
	case t == "[]uint8":
		return "a base64 string"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "v1."):
		return "an object"
	}
	return ""
}

// pathElem is one step of a field path: a field name or a list index.
type pathElem struct {
	name  string
	index int // for a list index; -1 for a field name
}

// parseFieldPath reads "spec.rules[0].http" as spec, rules, [0], http.
func parseFieldPath(p string) []pathElem {
	var out []pathElem
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, pathElem{name: p, index: -1})
			}
			n, err := strconv.Atoi(p[1:end])
			if err != nil || n < 0 {
				out = append(out, pathElem{name: p[:end+1], index: -1})
			} else {
				out = append(out, pathElem{index: n})
			}
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			out = append(out, pathElem{name: p[:end], index: -1})
			p = p[end:]
		}
	}
	return out
}

func renderPath(elems []pathElem) string {
	var b strings.Builder
	for i, e := range elems {
		if e.index >= 0 {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.name)
	}
	return b.String()
}

// walkSchema follows elems through Go type t by json tags. It returns how
// many leading elements are schema fields or list indices, and the type the
// last of them leads to. It stops at maps: their keys are document data.
func walkSchema(t reflect.Type, elems []pathElem) (int, reflect.Type) {
	for i, e := range elems {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if e.index >= 0 {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return i, nil
			}
			t = t.Elem()
			continue
		}
		// Paths without indices ("spec.ports.port") step through lists.
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return i, nil
		}
		f, ok := jsonField(t, e.name)
		if !ok {
			return i, nil
		}
		t = f
	}
	return len(elems), t
}

func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if inner, ok := jsonField(ft, name); ok {
					return inner, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == name || (tag == "" && f.Name == name) {
			return f.Type, true
		}
	}
	return nil, false
}

// locatePath finds, best effort, the line of the last element of a field
// path in a block-style document: each field is searched for after the
// previous one, and list indices count the items of a "- " list. It falls
// back to the last element it found, then to the document start.
func locatePath(doc document, elems []pathElem) int {
	lines := strings.Split(string(doc.text), "\n")
	found := -1 // index into lines
	from := 0
	for _, e := range elems {
		var at int
		if e.index >= 0 {
			if found < 0 {
				break
			}
			at = listItem(lines, found, e.index)
		} else {
			at = findKey(lines, from, e.name)
		}
		if at < 0 {
			break
		}
		found = at
		if e.index >= 0 {
			from = at // the item's first key shares the "- " line
		} else {
			from = at + 1
		}
	}
	if found < 0 {
		return doc.startLine
	}
	return doc.firstLine + found
}

// findKey returns the first line at or after from that holds the mapping
// key name, or -1.
func findKey(lines []string, from int, name string) int {
	for i := from; i < len(lines); i++ {
		t := strings.TrimLeft(lines[i], " \t")
		for strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "-\t") {
			t = strings.TrimLeft(t[2:], " \t")
		}
		for _, q := range []string{`"`, `'`, ""} {
			k := q + name + q
			if !strings.HasPrefix(t, k) {
				continue
			}
			rest := strings.TrimLeft(t[len(k):], " \t")
			if rest == ":" || strings.HasPrefix(rest, ": ") || strings.HasPrefix(rest, ":\t") || strings.HasPrefix(rest, ":\r") {
				return i
			}
		}
	}
	return -1
}

// listItem returns the line of item n of the block list that follows the key
// on line key, or -1.
func listItem(lines []string, key, n int) int {
	dash := -1
	count := 0
	for i := key + 1; i < len(lines); i++ {
		raw := strings.TrimRight(lines[i], "\r")
		t := strings.TrimLeft(raw, " ")
		if t == "" || t[0] == '#' {
			continue
		}
		ind := len(raw) - len(t)
		isItem := t == "-" || strings.HasPrefix(t, "- ")
		if dash < 0 {
			if !isItem {
				return -1
			}
			dash = ind
		}
		if ind < dash {
			return -1
		}
		if ind == dash {
			if !isItem {
				return -1
			}
			if count == n {
				return i
			}
			count++
		}
	}
	return -1
}
