package watcher

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestUpdateInfos feeds translator snapshots to the status writer's view:
// the first is the whole table, later ones carry only the keys put and
// deleted, and keys of other kinds are ignored.
func TestUpdateInfos(t *testing.T) {
	info := func(ns, name string, rejected bool) []byte {
		data, err := json.Marshal(bus.IngressInfo{Namespace: ns, Name: name, Rejected: rejected})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	infos := map[string]bus.IngressInfo{"stale/left-over": {}}
	updateInfos(infos, bus.Snapshot{Full: true, Puts: map[string][]byte{
		bus.Key(bus.KindIngress, "ns", "a"): info("ns", "a", false),
		bus.Key(bus.KindIngress, "ns", "b"): info("ns", "b", false),
		bus.Key(bus.KindBackend, "ns-a-80"): []byte(`{"name":"ns-a-80"}`),
	}})
	if got := slices.Sorted(maps.Keys(infos)); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("after the whole table: %v", got)
	}
	updateInfos(infos, bus.Snapshot{
		Puts:    map[string][]byte{bus.Key(bus.KindIngress, "ns", "b"): info("ns", "b", true)},
		Deletes: []string{bus.Key(bus.KindIngress, "ns", "a"), bus.Key(bus.KindBackend, "ns-a-80")},
	})
	if got := slices.Sorted(maps.Keys(infos)); !slices.Equal(got, []string{"ns/b"}) || !infos["ns/b"].Rejected {
		t.Fatalf("after a change: %v", infos)
	}
}
