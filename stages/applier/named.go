package applier

import (
	"encoding/json"
	"hash/maphash"
	"maps"
	"slices"
)

// namedShards is how many maps a namedValues splits its names over.
const namedShards = 64

// namedValues maps names to JSON values (the backends, by name), split in
// shards by a hash of the name. A copy of the struct shares every shard:
// the apply loop keeps the state it applied while the next one is built
// from it, and a write copies only the shard it changes (desiredTable.own),
// so a one-backend change among 10,000 copies some 150 names, not all of
// them. Comparing or diffing two states skips the shards they share.
type namedValues struct {
	shards [namedShards]map[string]json.RawMessage
}

// namedSeed hashes names to shards; one per process is enough, since
// shards are never stored or sent.
var namedSeed = maphash.MakeSeed()

func shardOf(name string) int {
	return int(maphash.String(namedSeed, name) % namedShards)
}

func (v *namedValues) get(name string) (json.RawMessage, bool) {
	data, ok := v.shards[shardOf(name)][name]
	return data, ok
}

// value is name's value, nil when it has none: what a post's body writes.
func (v *namedValues) value(name string) json.RawMessage {
	data, _ := v.get(name)
	return data
}

// set and remove write name's shard, which the caller owns (it is not
// shared with another copy: own).
func (v *namedValues) set(name string, data json.RawMessage) {
	i := shardOf(name)
	if v.shards[i] == nil {
		v.shards[i] = map[string]json.RawMessage{}
	}
	v.shards[i][name] = data
}

func (v *namedValues) remove(name string) {
	delete(v.shards[shardOf(name)], name)
}

// own copies name's shard, so that a write to it changes this copy only.
func (v *namedValues) own(name string) {
	i := shardOf(name)
	v.shards[i] = maps.Clone(v.shards[i])
}

func (v *namedValues) len() int {
	n := 0
	for _, s := range v.shards {
		n += len(s)
	}
	return n
}

// sortedNames are every name, sorted.
func (v *namedValues) sortedNames() []string {
	names := make([]string, 0, v.len())
	for _, s := range v.shards {
		for name := range s {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// namedEqual says whether a and b hold the same values; shards they share
// are equal without a look.
func namedEqual(a, b *namedValues) bool {
	for i := range a.shards {
		if !sameMap(a.shards[i], b.shards[i]) && !maps.EqualFunc(a.shards[i], b.shards[i], jsonEqual) {
			return false
		}
	}
	return true
}

// namedChanges are the names whose value next has new or different from
// running's, and the names running has that next no longer has, each
// unsorted; shards the two share are skipped.
func namedChanges(next, running *namedValues) (changed, removed []string) {
	for i := range next.shards {
		if !sameMap(next.shards[i], running.shards[i]) {
			changed, removed = diffNamed(next.shards[i], running.shards[i], changed, removed)
		}
	}
	return changed, removed
}

// diffNamed appends to changed the names whose value next has new or
// different from running's, and to removed the names only running has.
func diffNamed(next, running map[string]json.RawMessage, changed, removed []string) ([]string, []string) {
	for name, value := range next {
		if old, ok := running[name]; !ok || !jsonEqual(old, value) {
			changed = append(changed, name)
		}
	}
	for name := range running {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	return changed, removed
}
