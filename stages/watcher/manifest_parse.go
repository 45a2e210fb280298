// Parsing of manifest files: multi-document YAML into typed Kubernetes
// objects, with errors that name the file and line but never quote the
// document (it may hold Secret data).

package watcher

import (
	"bytes"
	"encoding/base64"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"switchyard.dev/switchyard/bus"
)

// Object is one Kubernetes object read from a manifest.
type Object struct {
	Key    string // bus.Key(bus.KindObject, kind, ns, name)
	JSON   []byte // the object re-encoded as canonical JSON of its typed struct (k8s.io/api types), apiVersion and kind set
	Source string // "file.yaml:12", where its document starts
}

// kindSpec describes one object kind the manifests source accepts.
type kindSpec struct {
	token      string // lowercase kind, the bus key token
	kind       string // Kubernetes kind, for messages
	gvk        schema.GroupVersionKind
	namespaced bool
	// validName checks metadata.name the way the API server does for this kind.
	validName func(string) []string
	newObject func() runtime.Object
}

// manifestKinds maps apiVersion and kind, exactly as written in a manifest,
// to what the source does with them. Anything else is skipped.
var manifestKinds = map[[2]string]kindSpec{}

// kindNames holds every supported kind name, to tell "a kind we know at an
// apiVersion we do not" (probably a mistake) from a kind we never handle.
var kindNames = map[string]bool{}

func init() {
	for _, k := range []kindSpec{
		{token: "ingress", gvk: networkingv1.SchemeGroupVersion.WithKind("Ingress"), namespaced: true,
			validName: validation.IsDNS1123Subdomain, newObject: func() runtime.Object { return &networkingv1.Ingress{} }},
		{token: "ingressclass", gvk: networkingv1.SchemeGroupVersion.WithKind("IngressClass"),
			validName: validation.IsDNS1123Subdomain, newObject: func() runtime.Object { return &networkingv1.IngressClass{} }},
		{token: "service", gvk: corev1.SchemeGroupVersion.WithKind("Service"), namespaced: true,
			validName: validation.IsDNS1035Label, newObject: func() runtime.Object { return &corev1.Service{} }},
		{token: "endpointslice", gvk: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), namespaced: true,
			validName: validation.IsDNS1123Subdomain, newObject: func() runtime.Object { return &discoveryv1.EndpointSlice{} }},
		{token: "secret", gvk: corev1.SchemeGroupVersion.WithKind("Secret"), namespaced: true,
			validName: validation.IsDNS1123Subdomain, newObject: func() runtime.Object { return &corev1.Secret{} }},
		{token: "configmap", gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), namespaced: true,
			validName: validation.IsDNS1123Subdomain, newObject: func() runtime.Object { return &corev1.ConfigMap{} }},
	} {
		k.kind = k.gvk.Kind
		apiVersion, kind := k.gvk.ToAPIVersionAndKind()
		manifestKinds[[2]string{apiVersion, kind}] = k
		kindNames[kind] = true
	}
}

// strictDecoder decodes JSON into the typed structs the way the API server
// does: field names are case-sensitive, and unknown or duplicate fields are
// reported with their path.
var strictDecoder = func() *k8sjson.Serializer {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return k8sjson.NewSerializerWithOptions(k8sjson.DefaultMetaFactory, s, s, k8sjson.SerializerOptions{Strict: true})
}()

// skippedDoc is a document ParseManifest left out because its kind is not
// one the manifests source handles.
type skippedDoc struct {
	source     string
	apiVersion string
	kind       string
	knownKind  bool // the kind is supported, at another apiVersion
}

// ParseManifest reads one multi-document YAML file. An error names the file and the line.
//
// Each document is decoded strictly into its k8s.io/api type, so a misspelled
// field is an error. Documents of other kinds are skipped; empty and
// comment-only documents too. Namespaced objects without a namespace get
// "default", and a Secret's stringData is merged into data. Objects come back
// in document order; a later document with the same key as an earlier one
// overrides it when the set is assembled.
//
// Error messages hold the file name, a line number and the schema's field
// names, never text from the document, so Secret data cannot leak into logs.
func ParseManifest(name string, data []byte) ([]Object, error) {
	objs, _, err := parseManifest(name, data)
	return objs, err
}

func parseManifest(name string, data []byte) ([]Object, []skippedDoc, error) {
	var (
		objs    []Object
		skipped []skippedDoc
	)
	for _, doc := range splitDocuments(data) {
		if doc.startLine == 0 {
			continue // blank or comments only
		}
		obj, skip, err := parseDocument(name, doc)
		if err != nil {
			return nil, nil, err
		}
		if skip != nil {
			skipped = append(skipped, *skip)
		}
		if obj != nil {
			objs = append(objs, *obj)
		}
	}
	return objs, skipped, nil
}

// document is one YAML document of a file.
type document struct {
	text      []byte // what the YAML parser reads
	firstLine int    // 1-based file line of text's first line
	startLine int    // 1-based file line of the first line with content; 0 if none
}

// splitDocuments cuts a file at its "---" separators (and "..." document end
// markers), remembering where each document starts.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	var docs []document
	cur := document{firstLine: 1}
	start := 0 // offset of cur's text
	line := 0
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		text := bytes.TrimRight(data[off:next], "\r\n")
		switch sep := separatorLine(text); sep {
		case sepNone:
			if cur.startLine == 0 && hasContent(text) {
				cur.startLine = line
			}
		case sepPlain, sepEnd:
			cur.text = data[start:off]
			docs = append(docs, cur)
			cur = document{firstLine: line + 1}
			start = next
		case sepInline:
			// "--- {...}" or "--- !tag": the line opens the next document
			// and holds its first content.
			cur.text = data[start:off]
			docs = append(docs, cur)
			cur = document{firstLine: line, startLine: line}
			start = off
		}
		off = next
	}
	cur.text = data[start:]
	return append(docs, cur)
}

const (
	sepNone = iota
	sepPlain
	sepInline
	sepEnd
)

func separatorLine(line []byte) int {
	for _, marker := range []string{"---", "..."} {
		if !bytes.HasPrefix(line, []byte(marker)) {
			continue
		}
		rest := line[3:]
		if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
			return sepNone // "---foo" is a plain scalar
		}
		rest = bytes.TrimSpace(rest)
		switch {
		case len(rest) == 0 || rest[0] == '#':
			if marker == "..." {
				return sepEnd
			}
			return sepPlain
		case marker == "---":
			return sepInline
		}
		return sepNone
	}
	return sepNone
}

func hasContent(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] != '#'
}

// docError formats an error at a document line. msg must never hold text
// from the document.
func docError(file string, line int, msg string) error {
	return fmt.Errorf("%s:%d: %s", file, line, msg)
}

func parseDocument(file string, doc document) (*Object, *skippedDoc, error) {
	raw, err := yaml.YAMLToJSON(doc.text)
	if err != nil {
		return nil, nil, yamlError(file, doc, err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil // e.g. a lone "~"
	}
	if raw[0] != '{' {
		return nil, nil, docError(file, doc.startLine, "document is not a mapping (expected a Kubernetes object)")
	}
	var top map[string]stdjson.RawMessage
	if err := stdjson.Unmarshal(raw, &top); err != nil {
		return nil, nil, docError(file, doc.startLine, "document is not a Kubernetes object")
	}
	var apiVersion, kind string
	if v, ok := top["apiVersion"]; ok && stdjson.Unmarshal(v, &apiVersion) != nil {
		return nil, nil, docError(file, doc.startLine, "apiVersion must be a string")
	}
	if v, ok := top["kind"]; ok && stdjson.Unmarshal(v, &kind) != nil {
		return nil, nil, docError(file, doc.startLine, "kind must be a string")
	}
	switch {
	case apiVersion == "" && kind == "":
		return nil, nil, docError(file, doc.startLine, "document is not a Kubernetes object: apiVersion and kind are missing")
	case kind == "":
		return nil, nil, docError(file, doc.startLine, "kind is missing")
	case apiVersion == "":
		return nil, nil, docError(file, doc.startLine, "apiVersion is missing")
	}
	spec, ok := manifestKinds[[2]string{apiVersion, kind}]
	source := file + ":" + strconv.Itoa(doc.startLine)
	if !ok {
		return nil, &skippedDoc{source: source, apiVersion: apiVersion, kind: kind, knownKind: kindNames[kind]}, nil
	}

	// Duplicate keys are dropped silently by the plain conversion above;
	// the strict one reports them with their line.
	if _, err := yaml.YAMLToJSONStrict(doc.text); err != nil {
		return nil, nil, yamlError(file, doc, err)
	}
	obj := spec.newObject()
	if _, _, err := strictDecoder.Decode(raw, nil, obj); err != nil {
		line, msg := decodeErrorMessage(doc, reflect.TypeOf(obj).Elem(), err)
		return nil, nil, docError(file, line, spec.kind+": "+msg)
	}

	if ferr := normalize(spec, obj); ferr != nil {
		return nil, nil, docError(file, locatePath(doc, parseFieldPath(ferr.path)), spec.kind+": "+ferr.msg)
	}
	meta := obj.(metav1.Object)
	ns := meta.GetNamespace()
	if !spec.namespaced {
		ns = bus.ClusterScope
	}
	obj.GetObjectKind().SetGroupVersionKind(spec.gvk)
	js, err := stdjson.Marshal(obj)
	if err != nil {
		return nil, nil, docError(file, doc.startLine, spec.kind+": cannot encode object")
	}
	return &Object{
		Key:    bus.Key(bus.KindObject, spec.token, ns, meta.GetName()),
		JSON:   js,
		Source: source,
	}, nil, nil
}

// fieldError is a validation failure at a field path. msg names the field
// and the rule, never the value.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.msg }

// normalize validates the object's identity and applies what the API server
// would: the default namespace and Secret stringData.
func normalize(spec kindSpec, obj runtime.Object) *fieldError {
	meta := obj.(metav1.Object)
	switch {
	case meta.GetName() == "" && meta.GetGenerateName() != "":
		return &fieldError{"metadata.generateName", "metadata.name is missing (generateName is not supported in manifests)"}
	case meta.GetName() == "":
		return &fieldError{"metadata", "metadata.name is missing"}
	}
	if errs := spec.validName(meta.GetName()); len(errs) > 0 {
		return &fieldError{"metadata.name", "metadata.name is invalid: " + strings.Join(errs, "; ")}
	}
	if spec.namespaced {
		if meta.GetNamespace() == "" {
			meta.SetNamespace(metav1.NamespaceDefault)
		}
		if errs := validation.IsDNS1123Label(meta.GetNamespace()); len(errs) > 0 {
			return &fieldError{"metadata.namespace", "metadata.namespace is invalid: " + strings.Join(errs, "; ")}
		}
	} else {
		meta.SetNamespace("") // the API server ignores it on cluster-scoped objects
	}

	switch o := obj.(type) {
	case *corev1.Secret:
		for k := range o.StringData {
			if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
				return &fieldError{"stringData", "stringData has an invalid key: " + strings.Join(errs, "; ")}
			}
		}
		if err := validKeys("data", o.Data); err != nil {
			return err
		}
		if len(o.StringData) > 0 && o.Data == nil {
			o.Data = make(map[string][]byte, len(o.StringData))
		}
		for k, v := range o.StringData {
			o.Data[k] = []byte(v) // stringData wins, as on the API server
		}
		o.StringData = nil
	case *corev1.ConfigMap:
		if err := validKeys("data", o.Data); err != nil {
			return err
		}
		if err := validKeys("binaryData", o.BinaryData); err != nil {
			return err
		}
		for k := range o.BinaryData {
			if _, ok := o.Data[k]; ok {
				return &fieldError{"binaryData", "a key is in both data and binaryData"}
			}
		}
	}
	return nil
}

func validKeys[V any](field string, m map[string]V) *fieldError {
	for k := range m {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return &fieldError{field, field + " has an invalid key: " + strings.Join(errs, "; ")}
		}
	}
	return nil
}

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
// names and finds the line it is about. It never returns document text: a
// path element is shown only once the Go type proves it a schema field.
func decodeErrorMessage(doc document, t reflect.Type, err error) (int, string) {
	if se, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range se.Errors() {
			fe, ok := e.(interface{ FieldPath() string })
			if !ok {
				continue
			}
			elems := parseFieldPath(fe.FieldPath())
			n, _ := walkSchema(t, elems)
			what := "unknown field"
			if strings.HasPrefix(e.Error(), "duplicate field") {
				what = "duplicate field"
			}
			if n > 0 {
				what += " in " + renderPath(elems[:n])
			} else {
				what += " at the top level"
			}
			return locatePath(doc, elems), what
		}
		return doc.startLine, "strict decoding failed"
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		elems := parseFieldPath(m[2])
		n, ft := walkSchema(t, elems)
		got := jsonKind(m[1])
		want := goTypeKind(m[3])
		if n == len(elems) && ft == reflect.TypeFor[intstr.IntOrString]() {
			want = "a number or a string"
		}
		msg := "wrong type"
		if n > 0 {
			msg += " in " + renderPath(elems[:n])
		}
		switch {
		case got == "a number" && want == "a number":
			msg += ": number out of range"
		case want != "":
			msg += ": got " + got + ", want " + want
		default:
			msg += ": got " + got
		}
		return locatePath(doc, elems), msg
	}
	var b64 base64.CorruptInputError
	if errors.As(err, &b64) || strings.HasPrefix(err.Error(), "illegal base64 data at input byte ") {
		field := "data"
		if t == reflect.TypeFor[corev1.ConfigMap]() {
			field = "binaryData"
		}
		return locatePath(doc, parseFieldPath(field)), "a value in " + field + " is not valid base64"
	}
	return doc.startLine, "a value does not match the " + t.Name() + " schema"
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
