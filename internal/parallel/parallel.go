// Package parallel spreads independent work over the CPUs: the JSON of a
// controller's start, tens of thousands of values that do not depend on
// one another.
package parallel

import (
	"runtime"
	"sync"
)

// For calls fn(i) for every i in [0, n) and returns when every call has.
// The calls run on up to GOMAXPROCS goroutines, each with at least
// minEach of them; fewer than that run in turn, since a goroutine costs
// more than a few small calls. fn must be safe to call concurrently for
// different i.
func For(n, minEach int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/max(minEach, 1))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(i)
			}
		})
	}
	wg.Wait()
}
