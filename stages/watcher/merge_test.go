package watcher

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/manifest"
)

// TestMergeChangedMatchesMergeAll: after every random edit of a few files
// (objects added, changed, removed, moved between files, defined twice,
// files removed), merge gives exactly the set a merge of every file gives.
func TestMergeChangedMatchesMergeAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := &scanState{src: newManifestSource(t.TempDir(), zap.NewNop()), files: map[string]*manifestFile{}}
	files := []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml"}
	edit := func(name string) {
		f := st.files[name]
		if f == nil {
			f = &manifestFile{}
			st.files[name] = f
		}
		st.markDirty(name, f.objects)
		var objs []manifest.Object
		for range rng.IntN(6) {
			key := fmt.Sprintf("object.configmap.ns.k%d", rng.IntN(12)) // few keys: collisions happen
			objs = append(objs, manifest.Object{Key: key, Source: name, JSON: fmt.Appendf(nil, `{"v":%d}`, rng.IntN(3))})
		}
		f.objects = objs
	}
	for _, name := range files {
		edit(name)
	}
	previous, _ := st.merge()
	incremental := 0
	for step := range 2000 {
		for range 1 + rng.IntN(2) {
			name := files[rng.IntN(len(files))]
			if rng.IntN(8) == 0 && st.files[name] != nil {
				st.markDirty(name, st.files[name].objects)
				delete(st.files, name)
				continue
			}
			edit(name)
		}
		if st.set != nil && !st.dups {
			incremental++
		}
		got, changed := st.merge()
		want, _ := st.mergeAll()
		if !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("step %d: merge gave %d keys, a full merge %d", step, len(got), len(want))
		}
		// The keys merge says changed are all that differ from the set
		// before (the watcher compares only those).
		if changed != nil {
			said := map[string]bool{}
			for _, k := range changed {
				said[k] = true
			}
			for _, k := range slices.Concat(slices.Collect(maps.Keys(got)), slices.Collect(maps.Keys(previous))) {
				a, inGot := got[k]
				b, inPrevious := previous[k]
				if !said[k] && (inGot != inPrevious || string(a) != string(b)) {
					t.Fatalf("step %d: %s changed, and merge did not say so", step, k)
				}
			}
		}
		// As the watcher does once it has published got: the set before
		// is released, and the next merge is built in its map.
		st.src.Release(previous)
		previous = got
	}
	if incremental < 100 {
		t.Errorf("only %d of 2000 merges could start from the last set; the test no longer covers mergeChanged", incremental)
	}
}

// TestSetPool: a released map comes back empty, and only one is kept.
func TestSetPool(t *testing.T) {
	p := newSetPool()
	first := map[string][]byte{"a": []byte("1")}
	p.put(first)
	p.put(map[string][]byte{"b": nil}) // one is waiting already: dropped
	p.put(nil)
	got := p.get(4)
	if len(got) != 0 {
		t.Fatalf("a reused map holds %d keys", len(got))
	}
	got["c"] = nil
	if _, ok := first["c"]; !ok {
		t.Fatal("get did not return the released map")
	}
	if again := p.get(4); len(again) != 0 || again == nil {
		t.Fatalf("an empty pool returned %v", again)
	}
}

// TestObjectChanges: comparing only the keys a source says changed gives
// the same puts and deletes as comparing every key, repeats in the hint
// included; a key left out of the hint is not compared.
func TestObjectChanges(t *testing.T) {
	last := map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": []byte("3"), "d": []byte("4")}
	next := map[string][]byte{"a": last["a"], "b": []byte("2*"), "d": []byte("4"), "e": []byte("5")}
	wantPuts := map[string][]byte{"b": []byte("2*"), "e": []byte("5")}
	wantDeletes := []string{"c"}
	for _, tc := range []struct {
		name string
		hint []string
	}{
		{"every key", nil},
		{"the changed keys", []string{"b", "c", "e"}},
		{"with repeats and unchanged keys", []string{"e", "c", "b", "c", "d", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			puts, deletes := objectChanges(last, next, tc.hint)
			if !maps.EqualFunc(puts, wantPuts, bytes.Equal) || !slices.Equal(deletes, wantDeletes) {
				t.Errorf("puts %q, deletes %q; want %q, %q", puts, deletes, wantPuts, wantDeletes)
			}
		})
	}
	if puts, deletes := objectChanges(last, next, []string{}); len(puts) != 0 || len(deletes) != 0 {
		t.Errorf("an empty hint compared keys: %q %q", puts, deletes)
	}
}
