// Package catalog is ingress-nginx's vocabulary as data: every annotation
// name and every controller ConfigMap key, each with what Switchyard does
// with it when nothing in Switchyard implements it (refuse it, or ignore it
// with a warning). Whether a name IS implemented is never read from here:
// the annotations stage asks its plugins' descriptions, the translator its
// ConfigMap parsers, so a new plugin or key parser makes a name implemented
// without touching these files.
package catalog

import (
	_ "embed"
	"fmt"
	"strings"
)

// Status is what Switchyard does with a name that nothing implements.
type Status string

const (
	// Refused: an Ingress carrying the annotation is rejected; a ConfigMap
	// key is reported at error level. Serving as if the name were absent
	// would be unsafe (access control, a firewall) or it is raw NGINX text.
	Refused Status = "refused"
	// Ignored: served as if the name were absent, with a warning.
	Ignored Status = "ignored"
	// Removed: a ConfigMap key ingress-nginx itself no longer reads.
	Removed Status = "removed"
)

// Annotation is one of ingress-nginx's annotation names, without prefix.
type Annotation struct {
	Name string
	// AliasOf is the canonical name when Name is an alias.
	AliasOf string
	Status  Status // when no plugin owns it
	Reason  string
}

// Key is one of ingress-nginx's controller ConfigMap keys.
type Key struct {
	Name    string
	Default string // ingress-nginx's default, as documented
	Status  Status // when no parser knows it
	Reason  string
}

//go:embed annotations.txt
var annotationsText string

//go:embed configmap.txt
var configMapText string

var (
	annotations   = mustParseAnnotations(annotationsText)
	annotationMap = indexBy(annotations, func(a Annotation) string { return a.Name })
	keys          = mustParseKeys(configMapText)
	keyMap        = indexBy(keys, func(k Key) string { return k.Name })
)

// Annotations lists every ingress-nginx annotation name, aliases included,
// in the order of the data file.
func Annotations() []Annotation { return append([]Annotation(nil), annotations...) }

// LookupAnnotation finds an annotation by its name without prefix.
func LookupAnnotation(name string) (Annotation, bool) {
	a, ok := annotationMap[name]
	return a, ok
}

// Keys lists every ingress-nginx ConfigMap key, in the order of the data file.
func Keys() []Key { return append([]Key(nil), keys...) }

// LookupKey finds a ConfigMap key.
func LookupKey(name string) (Key, bool) {
	k, ok := keyMap[name]
	return k, ok
}

func mustParseAnnotations(text string) []Annotation {
	var out []Annotation
	for n, fields := range dataLines(text, 3) {
		a := Annotation{Name: fields[0]}
		switch Status(fields[1]) {
		case Refused, Ignored:
			a.Status, a.Reason = Status(fields[1]), fields[2]
		case "alias":
			a.AliasOf = fields[2]
		default:
			panic(fmt.Sprintf("catalog: annotations.txt line %d: status %q", n, fields[1]))
		}
		out = append(out, a)
	}
	for _, a := range out {
		if a.AliasOf != "" {
			target := indexBy(out, func(a Annotation) string { return a.Name })[a.AliasOf]
			if target.Name == "" || target.AliasOf != "" {
				panic("catalog: alias " + a.Name + " of an unknown name " + a.AliasOf)
			}
		}
	}
	return out
}

func mustParseKeys(text string) []Key {
	var out []Key
	for n, fields := range dataLines(text, 4) {
		switch Status(fields[2]) {
		case Refused, Ignored, Removed:
		default:
			panic(fmt.Sprintf("catalog: configmap.txt line %d: status %q", n, fields[2]))
		}
		out = append(out, Key{Name: fields[0], Default: fields[1], Status: Status(fields[2]), Reason: fields[3]})
	}
	return out
}

// dataLines yields the tab-separated fields of each line that is not a
// comment, by line number; a malformed or repeated line is a programming
// error caught by every test run.
func dataLines(text string, width int) func(func(int, []string) bool) {
	return func(yield func(int, []string) bool) {
		seen := map[string]bool{}
		for i, line := range strings.Split(text, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			fields := strings.Split(line, "\t")
			if len(fields) != width || fields[0] == "" || seen[fields[0]] {
				panic(fmt.Sprintf("catalog: line %d: want %d tab-separated fields and a new name: %q", i+1, width, line))
			}
			seen[fields[0]] = true
			if !yield(i+1, fields) {
				return
			}
		}
	}
}

func indexBy[T any](items []T, name func(T) string) map[string]T {
	m := make(map[string]T, len(items))
	for _, it := range items {
		m[name(it)] = it
	}
	return m
}

// Nearest is the annotation name closest to name when it is within two
// edits (a typo), or "".
func Nearest(name string) string {
	if len(name) > 128 {
		return "" // a long value is no typo, and distance is quadratic
	}
	best, bestDist := "", 3
	for _, a := range annotations {
		if d := distance(name, a.Name); d < bestDist {
			best, bestDist = a.Name, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
