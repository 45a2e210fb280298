package manifest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

func TestParseFieldPath(t *testing.T) {
	for _, tc := range []struct {
		in, rendered string
		elems        []pathElem
	}{
		{"", "", nil},
		{"spec", "spec", []pathElem{{"spec", -1}}},
		{"spec.rules[0].http", "spec.rules[0].http", []pathElem{{"spec", -1}, {"rules", -1}, {index: 0}, {"http", -1}}},
		{"a[x].b", "a.[x].b", []pathElem{{"a", -1}, {"[x]", -1}, {"b", -1}}},
		{"a[-1]", "a.[-1]", []pathElem{{"a", -1}, {"[-1]", -1}}},
		{"a[3", "a.[3", []pathElem{{"a", -1}, {"[3", -1}}},
	} {
		got := parseFieldPath(tc.in)
		if !reflect.DeepEqual(got, tc.elems) {
			t.Errorf("parseFieldPath(%q) = %+v, want %+v", tc.in, got, tc.elems)
		}
		if r := renderPath(got); r != tc.rendered {
			t.Errorf("renderPath(parseFieldPath(%q)) = %q, want %q", tc.in, r, tc.rendered)
		}
	}
}

func TestWalkSchema(t *testing.T) {
	ingress := reflect.TypeFor[networkingv1.Ingress]()
	for _, tc := range []struct {
		path string
		n    int
		typ  reflect.Type // nil: not checked
	}{
		{"spec.rules[0].host", 4, reflect.TypeFor[string]()},
		{"spec.rules.host", 3, reflect.TypeFor[string]()}, // lists stepped through
		{"metadata.name", 2, reflect.TypeFor[string]()},   // through the embedded ObjectMeta
		{"metadata.annotations.secret-key", 2, nil},       // stops at a map: keys are data
		{"spec.nosuchfield.x", 1, nil},                    // an unknown field ends the walk
		{"spec[0]", 1, nil},                               // an index into a struct
		{"kind", 1, reflect.TypeFor[string]()},            // TypeMeta, embedded
		{"spec.defaultBackend.service.port.number", 5, reflect.TypeFor[int32]()},
	} {
		n, typ := walkSchema(ingress, parseFieldPath(tc.path))
		if n != tc.n || (tc.typ != nil && typ != tc.typ) {
			t.Errorf("walkSchema(Ingress, %q) = %d, %v; want %d, %v", tc.path, n, typ, tc.n, tc.typ)
		}
	}
}

const locateDoc = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: a.example
    http:
      paths:
      - path: /
        pathType: Prefix
  - host: b.example
    "http":
      paths:
      - path: /b
`

func TestLocatePath(t *testing.T) {
	// The document starts on line 10 of its file.
	doc := document{text: []byte(locateDoc), firstLine: 10, startLine: 10}
	for _, tc := range []struct {
		path string
		line int
	}{
		{"spec", 14},
		{"spec.rules[0].host", 16},
		{"spec.rules[1].host", 21},
		{"spec.rules[1].http.paths[0].path", 24}, // a quoted key
		{"spec.rules[0].http.paths[0].pathType", 20},
		{"spec.rules[5].host", 15},  // no such item: the list's key
		{"spec.tls[0]", 14},         // no such key: the last found
		{"nosuch", 10},              // nothing found: the document start
		{"metadata.name.extra", 13}, // found as far as it goes
	} {
		if got := locatePath(doc, parseFieldPath(tc.path)); got != tc.line {
			t.Errorf("locatePath(%q) = line %d, want %d", tc.path, got, tc.line)
		}
	}
}

func TestFindKeyAndListItem(t *testing.T) {
	lines := strings.Split("a:\n- x: 1\n  y: 2\n-   x: 3\n# c\n- z\nb: 4\nbb: 5\n'c' : 6", "\n")
	for _, tc := range []struct {
		name string
		from int
		want int
	}{
		{"a", 0, 0}, {"x", 0, 1}, {"x", 2, 3}, {"y", 0, 2}, {"b", 0, 6}, {"bb", 0, 7}, {"c", 0, 8}, {"z", 0, -1}, {"a", 1, -1},
	} {
		if got := findKey(lines, tc.from, tc.name); got != tc.want {
			t.Errorf("findKey(%q from %d) = %d, want %d", tc.name, tc.from, got, tc.want)
		}
	}
	for n, want := range []int{1, 3, 5, -1} {
		if got := listItem(lines, 0, n); got != want {
			t.Errorf("listItem(a, %d) = %d, want %d", n, got, want)
		}
	}
	if got := listItem(lines, 6, 0); got != -1 {
		t.Errorf("listItem after a scalar key = %d, want -1", got)
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	doc := document{text: []byte(locateDoc), firstLine: 10, startLine: 10}
	raw, err := yaml.YAMLToJSON(doc.text)
	if err != nil {
		t.Fatal(err)
	}
	ingress := reflect.TypeFor[networkingv1.Ingress]()
	for _, tc := range []struct {
		name string
		t    reflect.Type
		err  error
		line int
		msg  string
	}{
		{"inline struct names dropped, list index found", ingress,
			errors.New("json: cannot unmarshal string into Go struct field HTTPIngressPath.spec.rules.IngressRuleValue.http.paths.path of type int"),
			19, "wrong type in spec.rules[0].http.paths[0].path: got a string, want a number"},
		{"type error in a list item", ingress,
			errors.New("json: cannot unmarshal number into Go struct field IngressRule.spec.rules.host of type string"),
			16, "wrong type in spec.rules.host: got a number, want a string"},
		{"number out of range", ingress,
			errors.New("json: cannot unmarshal number 99999999999 into Go struct field ServiceBackendPort.spec.defaultBackend.service.port.number of type int32"),
			14, "wrong type in spec.defaultBackend.service.port.number: number out of range"},
		{"map keys are not shown", ingress,
			errors.New("json: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations.Sup3rS3cret of type string"),
			12, "wrong type in metadata.annotations: got a list, want a string"},
		{"bad base64 in a Secret", reflect.TypeFor[corev1.Secret](),
			errors.New("illegal base64 data at input byte 4"), 10, "a value in data is not valid base64"},
		{"bad base64 in a ConfigMap", reflect.TypeFor[corev1.ConfigMap](),
			errors.New("illegal base64 data at input byte 4"), 10, "a value in binaryData is not valid base64"},
		{"anything else", ingress, errors.New("Sup3rS3cret"), 10, "a value does not match the Ingress schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, _, msg := decodeErrorMessage(doc, raw, tc.t, tc.err)
			if line != tc.line || msg != tc.msg {
				t.Errorf("got line %d %q, want line %d %q", line, msg, tc.line, tc.msg)
			}
		})
	}
}

func TestSchemaPathAndIndices(t *testing.T) {
	ingress := reflect.TypeFor[networkingv1.Ingress]()
	raw, err := yaml.YAMLToJSON([]byte(`spec:
  rules:
  - host: a.example
  - host: b.example
    http:
      paths:
      - path: /
        backend: {service: {name: a, port: {number: 80}}}
      - path: /x
        backend: {service: {name: b, port: {number: eighty}}}
  tls:
  - hosts: [a, 7]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reported, kind, want string
	}{
		{"spec.rules.IngressRuleValue.http.paths.backend.service.port.number", "string",
			"spec.rules[1].http.paths[1].backend.service.port.number"},
		{"spec.rules.IngressRuleValue.http.paths.backend.service.port.number", "number",
			"spec.rules[1].http.paths[0].backend.service.port.number"},
		{"spec.rules.IngressRuleValue.http", "", "spec.rules[1].http"},
		{"spec.tls.hosts", "number", "spec.tls[0].hosts[1]"},                                   // a list's item
		{"spec.rules.host", "bool", "spec.rules.host"},                                         // no such value: as reported
		{"spec.rules[0].http", "", "spec.rules[0].http"},                                       // indices kept
		{"spec.IngressRuleValue", "", "spec.IngressRuleValue"},                                 // not embedded there
		{"metadata.annotations.IngressRuleValue", "", "metadata.annotations.IngressRuleValue"}, // map keys kept
	} {
		elems := schemaPath(ingress, parseFieldPath(tc.reported))
		if got := renderPath(withIndices(raw, elems, tc.kind)); got != tc.want {
			t.Errorf("%s (%s): got %s, want %s", tc.reported, tc.kind, got, tc.want)
		}
	}
}

func TestLineCount(t *testing.T) {
	for in, want := range map[string]int{"": 1, "a": 1, "a\n": 1, "a\nb": 2, "a\nb\n": 2, "\n\n": 2} {
		if got := lineCount([]byte(in)); got != want {
			t.Errorf("lineCount(%q) = %d, want %d", in, got, want)
		}
	}
}
