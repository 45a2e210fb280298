package watcher

import (
	"fmt"
	"maps"
	"math/rand/v2"
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
	previous := st.merge()
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
		got := st.merge()
		want, _ := st.mergeAll()
		if !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("step %d: merge gave %d keys, a full merge %d", step, len(got), len(want))
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
