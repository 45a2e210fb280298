// Package freeport picks loopback TCP ports for tests and benchmarks.
//
// A port is found by binding port 0 and closing the listener, so it is only
// "free a moment ago". The kernel may hand the same port out again at once,
// and two such ports given to one process (say --http-addr and --https-addr)
// then collide. Loopback therefore never returns a port it returned before in
// this process.
package freeport

import (
	"fmt"
	"net"
	"sync"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// attempts bounds the retries when the kernel keeps offering ports this
// process already handed out; each retry binds a new ephemeral port.
const attempts = 100

// Loopback returns a TCP port on 127.0.0.1 that was free a moment ago and
// that this process has not been given before.
func Loopback() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range attempts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free loopback port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handed[port] {
			handed[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free loopback port: %d tries gave ports already handed out", attempts)
}
