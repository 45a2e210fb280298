package renderer

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
)

// The Lua shared dicts hold the dynamic payloads (backends, certificates)
// as versioned snapshots: during a publish the previous, the current and
// the new snapshot are all there (lua/switchyard/util/snapshot.lua).
// Backends are stored one key each with a pointer key beside it
// (lua/switchyard/util/backend_store.lua): a full post holds the old and
// the new values at once, and every backend costs two keys' overhead. A dict too
// small for that answers 507 and keeps the running snapshot, which the
// applier reports; sizing the dicts from the data keeps it from happening.
// Sizes grow in powers of two and never shrink, so a resize (a reload,
// after which the applier pushes again) is rare.

// dictCopies is how many snapshots a dict holds at once, plus room for the
// dict's own per-key overhead and fragmentation.
const dictCopies = 4

// payloadSizes tracks the encoded size of every backend and certificate.
type payloadSizes struct {
	backends, certs, routes             map[string]int
	backendTotal, certTotal, routeTotal int
}

func newPayloadSizes() payloadSizes {
	return payloadSizes{backends: map[string]int{}, certs: map[string]int{}, routes: map[string]int{}}
}

func setSize(sizes map[string]int, total *int, key string, n int) {
	*total += n - sizes[key]
	if n == 0 {
		delete(sizes, key)
		return
	}
	sizes[key] = n
}

// dictSize is the size of a dict that holds payload bytes: at least
// minimum, else the next power of two MiB with room for dictCopies.
func dictSize(payload int, minimum string) (string, error) {
	least, err := bus.ParseSize(minimum)
	if err != nil {
		return "", err
	}
	need := int64(dictCopies*payload) + 1<<20
	if need <= least {
		return minimum, nil
	}
	size := int64(1 << 20)
	for size < need {
		size <<= 1
	}
	return fmt.Sprintf("%dm", size>>20), nil
}
