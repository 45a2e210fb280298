// Package chart renders the Helm chart in deploy/helm/switchyard as `helm
// template` does, with Helm's own chart loader and template engine, so the
// generated manifest and the chart's tests need no helm binary.
package chart

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Render renders the chart in dir as release name in namespace, with
// values over the chart's defaults (nil: the defaults), and returns the
// documents in template file order, each starting with "---" and a
// "# Source:" line, as `helm template` prints them.
func Render(dir, name, namespace string, values map[string]any) ([]byte, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	var b bytes.Buffer
	for _, file := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(path.Base(file), "_") || path.Ext(file) != ".yaml" {
			continue
		}
		for _, doc := range strings.Split(files[file], "\n---\n") {
			doc = strings.TrimSpace(doc)
			if doc == "" || isComments(doc) {
				continue
			}
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", file, doc)
		}
	}
	return b.Bytes(), nil
}

// isComments says a rendered document holds nothing but comments (a
// template whose condition is off leaves its leading comments).
func isComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
