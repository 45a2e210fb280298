package main

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins/builtin"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/annotations.md from the plugins' descriptions and docs/features.md from the feature map")

// TestAnnotationDocsAreCurrent keeps docs/annotations.md equal to what
// `switchyard annotations` prints, so the committed reference never drifts
// from the plugins' own descriptions.
func TestAnnotationDocsAreCurrent(t *testing.T) {
	var got bytes.Buffer
	writeAnnotationDocs(&got, bus.DefaultAnnotationsPrefix, builtin.Descriptions())
	checkDoc(t, "docs/annotations.md", "TestAnnotationDocsAreCurrent", got.Bytes())
}

// TestConfigMapDocsAreCurrent keeps docs/configmap.md equal to what the
// translator's key parsers and the catalog say.
func TestConfigMapDocsAreCurrent(t *testing.T) {
	var got bytes.Buffer
	writeConfigMapDocs(&got)
	checkDoc(t, "docs/configmap.md", "TestConfigMapDocsAreCurrent", got.Bytes())
}

// checkDoc compares a generated document with the committed one at path,
// and rewrites it first with -update (test names the test that does).
func checkDoc(t *testing.T, path, test string, got []byte) {
	t.Helper()
	if *updateDocs {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not current; run: go test -run %s -update .", path, test)
	}
}
