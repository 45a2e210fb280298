package watcher

// setPool holds one object set the watcher is done with, so that a source
// builds its next set in that map instead of a new one. At 10,000
// Ingresses a set is a map of 30,000 keys: a new one per change was half
// of what an endpoint change allocated, and so half of the garbage
// collections that changes cause.
type setPool chan map[string][]byte

func newSetPool() setPool { return make(setPool, 1) }

// get returns an empty map: a released one when there is one, else a new
// one sized for hint keys.
func (p setPool) get(hint int) map[string][]byte {
	select {
	case m := <-p:
		clear(m)
		return m
	default:
		return make(map[string][]byte, hint)
	}
}

// put offers m for reuse. The caller, and everything it passed m to, must
// hold no reference to it any more. With a map already waiting, m is
// left to the collector.
func (p setPool) put(m map[string][]byte) {
	if m == nil {
		return
	}
	select {
	case p <- m:
	default:
	}
}
