package applier

// A services entry whose port another process holds passes `nginx -t`
// (which binds nothing), but the master cannot bind it on the reload and
// keeps its previous configuration. That is traced to the entry like any
// other refusal (refusals.go): NGINX names the address, the listen line of
// that address says which entry it is. The renderer then leaves the entry
// out and everything else reloads. Unlike a refused line, a held port says
// nothing wrong about the entry: it comes back once the port is free, which
// the applier checks by binding it now and then (heldPortProbeInterval).

import (
	"context"
	"net"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// heldPortProbeInterval is how often a refused entry's port is tried.
const heldPortProbeInterval = 2 * time.Second

// bindFailure is NGINX's complaint about a port it cannot bind.
var bindFailure = regexp.MustCompile(`bind\(\) to (\S+) failed`)

// attributeBind traces a reload NGINX refused because it could not bind
// an address to the entry whose listen line has it. ok is false when the
// complaint is another one, or the address is no entry's.
func attributeBind(complaint string, files map[string]string) (bus.Refusal, bool) {
	m := bindFailure.FindStringSubmatch(complaint)
	if m == nil {
		return bus.Refusal{}, false
	}
	msg := complaint
	if i := strings.Index(msg, "[emerg]"); i >= 0 {
		msg = msg[i:]
	}
	content := files[streamServicesFile]
	for i, l := range strings.Split(content, "\n") {
		if !isListenOf(l, m[1]) {
			continue
		}
		kind, source, rev, ok := sourceOf(content, i+1)
		if !ok || kind != bus.RefusedServices {
			return bus.Refusal{}, false
		}
		return bus.Refusal{Kind: kind, Name: source, Rev: rev, Message: msg, File: streamServicesFile, Line: i + 1}, true
	}
	return bus.Refusal{}, false
}

// streamServicesFile is the renderer's file of the TCP and UDP services
// (renderer.ServicesFile; the applier imports no other stage).
const streamServicesFile = "stream.d/services.conf"

// isListenOf says whether line is a listen directive of addr.
func isListenOf(line, addr string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "listen "+addr)
	return ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ";"))
}

// heldPort says whether a refusal is for a held port, and which
// network and address to try.
func heldPort(ref bus.Refusal) (network, addr string, ok bool) {
	if ref.Kind != bus.RefusedServices {
		return "", "", false
	}
	m := bindFailure.FindStringSubmatch(ref.Message)
	if m == nil {
		return "", "", false
	}
	if strings.HasPrefix(ref.Name, "udp/") {
		return "udp", m[1], true
	}
	return "tcp", m[1], true
}

// portFree says whether addr can be bound now; the socket is closed at
// once.
func portFree(network, addr string) bool {
	if network == "udp" {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// hasHeldPorts says whether a refusal waits for a port.
func (s *Stage) hasHeldPorts() bool {
	for _, ref := range s.refusals {
		if _, _, ok := heldPort(ref); ok {
			return true
		}
	}
	return false
}

// freeHeldPorts drops the refusals whose port can be bound now, so the
// renderer brings their entries back.
func (s *Stage) freeHeldPorts(ctx context.Context, meta bus.Meta) {
	changed := false
	for key, ref := range s.refusals {
		network, addr, ok := heldPort(ref)
		if !ok || !portFree(network, addr) {
			continue
		}
		delete(s.refusals, key)
		changed = true
		s.log.Info("the port of a refused services entry is free; serving it again",
			zap.String("entry", ref.Name), zap.String("address", addr))
	}
	if changed {
		s.publishRefusals(ctx, meta)
	}
}

// stillHeld says whether ref is a held port's refusal whose entry files
// still render unchanged: a retry of the configuration NGINX could not
// bind, which says nothing new about the port.
func stillHeld(ref bus.Refusal, files map[string]string) bool {
	if _, _, ok := heldPort(ref); !ok {
		return false
	}
	return strings.Contains(files[streamServicesFile], "# source "+ref.Kind+" "+ref.Name+" rev="+ref.Rev+"\n")
}
