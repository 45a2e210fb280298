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
	const path = "docs/annotations.md"
	if *updateDocs {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("%s is not what `switchyard annotations` prints; run: go test -run TestAnnotationDocsAreCurrent -update .", path)
	}
}

// TestConfigMapDocsAreCurrent keeps docs/configmap.md equal to what the
// translator's key parsers and the catalog say.
func TestConfigMapDocsAreCurrent(t *testing.T) {
	var got bytes.Buffer
	writeConfigMapDocs(&got)
	const path = "docs/configmap.md"
	if *updateDocs {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("%s is not current; run: go test -run TestConfigMapDocsAreCurrent -update .", path)
	}
}
