package applier

import (
	"net"
	"testing"

	"switchyard.dev/switchyard/bus"
)

const servicesConf = `# TCP services ConfigMap default/tcp, port 9000: Service default/a port 7000
# source services tcp/9000 rev=0123456789ab
server {
    listen 127.0.0.1:9000 reuseport;
    proxy_pass "tcp-default-a-7000";
}

# UDP services ConfigMap default/udp, port 53: Service default/dns port 53
# source services udp/53 rev=ba9876543210
server {
    listen [::1]:53 udp;
    proxy_pass "udp-default-dns-53";
}
# source switchyard
server {
    listen 127.0.0.1:9100;
}
`

func TestAttributeBind(t *testing.T) {
	files := map[string]string{streamServicesFile: servicesConf}
	emerg := func(addr string) string {
		return "nginx kept its previous configuration: 2026/11/28 04:00:00 [emerg] 12#12: bind() to " + addr + " failed (98: Address already in use)"
	}
	tests := []struct {
		name, complaint string
		want            *bus.Refusal
	}{
		{"TCP entry", emerg("127.0.0.1:9000"), &bus.Refusal{Kind: bus.RefusedServices, Name: "tcp/9000", Rev: "0123456789ab",
			Message: "[emerg] 12#12: bind() to 127.0.0.1:9000 failed (98: Address already in use)", File: streamServicesFile, Line: 4}},
		{"UDP entry on IPv6", emerg("[::1]:53"), &bus.Refusal{Kind: bus.RefusedServices, Name: "udp/53", Rev: "ba9876543210",
			Message: "[emerg] 12#12: bind() to [::1]:53 failed (98: Address already in use)", File: streamServicesFile, Line: 11}},
		{"a prefix of another port", emerg("127.0.0.1:900"), nil},
		{"Switchyard's own listener", emerg("127.0.0.1:9100"), nil},
		{"another complaint", "nginx kept its previous configuration: [emerg] unknown directive", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := attributeBind(tt.complaint, files)
			checkAttribution(t, got, ok, tt.want)
		})
	}
}

// TestHeldPortRefusals: a held port's refusal lasts while the entry is
// rendered unchanged, and is over once the port can be bound.
func TestHeldPortRefusals(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	ref := bus.Refusal{Kind: bus.RefusedServices, Name: "tcp/9000", Rev: "0123456789ab",
		Message: "[emerg] 1#1: bind() to " + addr + " failed (98: Address already in use)"}
	network, got, ok := heldPort(ref)
	if !ok || network != "tcp" || got != addr {
		t.Fatalf("heldPort = %s %s %v", network, got, ok)
	}
	if portFree(network, addr) {
		t.Error("a held port counted as free")
	}
	l.Close()
	if !portFree(network, addr) {
		t.Error("a freed port counted as held")
	}
	if !stillHeld(ref, map[string]string{streamServicesFile: servicesConf}) {
		t.Error("the unchanged entry's refusal is over")
	}
	if stillHeld(ref, map[string]string{streamServicesFile: ""}) {
		t.Error("the refusal of an entry that is gone holds")
	}
	lineRefusal := bus.Refusal{Kind: bus.RefusedServices, Name: "tcp/9000", Rev: "0123456789ab", Message: "[emerg] unknown directive"}
	if _, _, ok := heldPort(lineRefusal); ok || stillHeld(lineRefusal, map[string]string{streamServicesFile: servicesConf}) {
		t.Error("a refused line counted as a held port")
	}
}
