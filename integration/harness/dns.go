package harness

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
)

// StartDNS answers A queries for the given names (lowercase, no trailing
// dot) on a loopback UDP port, and NXDOMAIN for any other name. It is just
// enough DNS for NGINX's resolver to find an ExternalName Service's host.
func StartDNS(t testing.TB, records map[string]net.IP) string {
	t.Helper()
	addr, _ := StartCountingDNS(t, records)
	return addr
}

// DNSQueries counts the queries a StartCountingDNS responder answered, by
// query type (1 is A, 28 AAAA).
type DNSQueries struct {
	mu     sync.Mutex
	byType map[uint16]int
}

// Count is how many queries of qtype were answered so far.
func (q *DNSQueries) Count(qtype uint16) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byType[qtype]
}

func (q *DNSQueries) add(qtype uint16) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.byType[qtype]++
}

// StartCountingDNS is StartDNS, and counts the queries it answers.
func StartCountingDNS(t testing.TB, records map[string]net.IP) (string, *DNSQueries) {
	t.Helper()
	queries := &DNSQueries{byType: map[uint16]int{}}
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, addr, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply, qtype := dnsReply(buf[:n], records); reply != nil {
				queries.add(qtype)
				_, _ = conn.WriteTo(reply, addr)
			}
		}
	}()
	return conn.LocalAddr().String(), queries
}

func dnsReply(q []byte, records map[string]net.IP) ([]byte, uint16) {
	if len(q) < 12 {
		return nil, 0
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil, 0
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil, 0
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1:])
	ip := records[strings.ToLower(strings.Join(labels, "."))].To4()

	reply := append([]byte{}, q[0:2]...)                      // id
	reply = append(reply, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // response, recursion available; 1 question
	switch {
	case ip == nil:
		reply[3] |= 3 // NXDOMAIN
	case qtype == 1:
		reply[7] = 1 // one answer
	}
	reply = append(reply, question...)
	if ip != nil && qtype == 1 {
		reply = append(reply, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4)
		reply = append(reply, ip...)
	}
	return reply, qtype
}
