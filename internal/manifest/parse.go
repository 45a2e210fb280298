// Package manifest parses manifest files: multi-document YAML into typed
// Kubernetes objects, with errors that name the file and line but never
// quote the document (it may hold Secret data). The watcher's manifests
// source reads the files; this package only parses them.
package manifest

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
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

// Skipped is a document Parse left out because its kind is not one the
// manifests source handles. APIVersion and Kind are document text: clip
// them before logging.
type Skipped struct {
	Source     string // "file.yaml:12"
	APIVersion string
	Kind       string
	KnownKind  bool // the kind is supported, at another apiVersion
}

// Parse reads one multi-document YAML file, returning its objects and the
// documents it skipped. A file with a document that does not parse yields
// no objects and an error holding a *DocumentError for each such document
// (DocumentErrors lists them), so that every one is reported at once.
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
func Parse(name string, data []byte) ([]Object, []Skipped, error) {
	var (
		objs    []Object
		skipped []Skipped
		errs    []error
	)
	for _, doc := range splitDocuments(data) {
		if doc.startLine == 0 {
			continue // blank or comments only
		}
		obj, skip, err := parseDocument(name, doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if skip != nil {
			skipped = append(skipped, *skip)
		}
		if obj != nil {
			objs = append(objs, *obj)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
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

// DocumentError is a document Parse could not read. Every field is safe
// to print: the object's identity is given only when it passes the API
// server's name rules, and nothing else comes from the document's values
// (it may hold Secret data).
type DocumentError struct {
	File string
	Line int // 1-based
	// Kind is the object's kind when it is one the manifests source
	// handles; Namespace (namespaced kinds) and Name when they could be
	// read and are valid names; "" otherwise.
	Kind      string
	Namespace string
	Name      string
	// Field is the schema path the error is about
	// ("spec.rules[0].http.paths[0].backend.service.port.number"), "" when
	// it is about the whole document.
	Field   string
	Message string // what is wrong, with Field in it when there is one
}

func (e *DocumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Kind != "" {
		b.WriteString(e.Kind)
		if e.Name != "" {
			b.WriteByte(' ')
			if e.Namespace != "" {
				b.WriteString(e.Namespace + "/")
			}
			b.WriteString(e.Name)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// DocumentErrors lists the *DocumentError values an error from Parse
// holds.
func DocumentErrors(err error) []*DocumentError {
	var out []*DocumentError
	var walk func(error)
	walk = func(err error) {
		if de, ok := err.(*DocumentError); ok {
			out = append(out, de)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// docError is an error at a document line, before its kind is known. msg
// must never hold text from the document.
func docError(file string, line int, msg string) error {
	return &DocumentError{File: file, Line: line, Message: msg}
}

// objectError is an error in a document of a known kind: it names the
// object when its metadata can be read.
func objectError(file string, line int, spec kindSpec, raw []byte, field, msg string) error {
	e := &DocumentError{File: file, Line: line, Kind: spec.kind, Field: field, Message: msg}
	e.Namespace, e.Name = identity(spec, raw)
	return e
}

// identity reads metadata.namespace and metadata.name loosely (the strict
// decode failed), keeping each only when it is a valid name for its place:
// anything else could be any text of the document.
func identity(spec kindSpec, raw []byte) (namespace, name string) {
	var doc struct {
		Metadata struct {
			Name      any `json:"name"`
			Namespace any `json:"namespace"`
		} `json:"metadata"`
	}
	if stdjson.Unmarshal(raw, &doc) != nil {
		return "", ""
	}
	n, _ := doc.Metadata.Name.(string)
	if n == "" || len(spec.validName(n)) > 0 {
		return "", ""
	}
	if !spec.namespaced {
		return "", n
	}
	ns, isString := doc.Metadata.Namespace.(string)
	switch {
	case doc.Metadata.Namespace == nil:
		ns = metav1.NamespaceDefault
	case !isString || len(validation.IsDNS1123Label(ns)) > 0:
		return "", ""
	}
	return ns, n
}

func parseDocument(file string, doc document) (*Object, *Skipped, error) {
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
		return nil, &Skipped{Source: source, APIVersion: apiVersion, Kind: kind, KnownKind: kindNames[kind]}, nil
	}

	// Duplicate keys are dropped silently by the plain conversion above;
	// the strict one reports them with their line.
	if _, err := yaml.YAMLToJSONStrict(doc.text); err != nil {
		e := yamlError(file, doc, err).(*DocumentError)
		e.Kind = spec.kind
		e.Namespace, e.Name = identity(spec, raw)
		return nil, nil, e
	}
	obj := spec.newObject()
	if _, _, err := strictDecoder.Decode(raw, nil, obj); err != nil {
		line, field, msg := decodeErrorMessage(doc, raw, reflect.TypeOf(obj).Elem(), err)
		return nil, nil, objectError(file, line, spec, raw, field, msg)
	}

	if ferr := normalize(spec, obj); ferr != nil {
		return nil, nil, objectError(file, locatePath(doc, parseFieldPath(ferr.path)), spec, raw, ferr.path, ferr.msg)
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
