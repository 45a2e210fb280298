// Package bustest helps tests take the bus away from a client.
package bustest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP to a NATS server and can cut every connection and
// refuse new ones: the bus away, as a client sees it.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	up     bool
	conns  []net.Conn
}

// StartProxy listens on a free loopback port and forwards to target
// ("host:port") while up. It stops when the test ends.
func StartProxy(t testing.TB, target string, up bool) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, up: up}
	t.Cleanup(func() { _ = ln.Close(); p.SetUp(false) })
	go p.serve()
	return p
}

// URL is the proxy's NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		var s net.Conn
		if p.up {
			s, err = net.Dial("tcp", p.target)
		}
		if !p.up || err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
	}
}

// SetUp lets connections through, or cuts them all and refuses new ones.
func (p *Proxy) SetUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}
