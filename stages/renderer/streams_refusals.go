package renderer

import (
	"encoding/json"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Refusals of TCP and UDP services entries (bus/refusals.go): each entry's
// server in ServicesFile is attributed to "<protocol>/<port>", so a line
// NGINX refuses, or a port it cannot bind on the reload, leaves that entry
// out while every other one is served.

// serviceSourceName is an entry's name in attribution comments: "tcp/9000".
func serviceSourceName(protocol string, port int) string {
	return strings.ToLower(protocol) + "/" + strconv.Itoa(port)
}

// serviceRev is an entry's revision: the entry without its endpoints,
// which change without making a refused port any freer.
func serviceRev(protocol string, svc bus.StreamService) string {
	svc.Endpoints = nil
	data, _ := json.Marshal(svc)
	return sourceRev([]byte(protocol), data)
}

// serviceSource is the attribution comment of an entry's server.
func serviceSource(protocol string, svc bus.StreamService) string {
	name, rev := serviceSourceName(protocol, svc.Port), serviceRev(protocol, svc)
	if !bus.SourceNamePattern.MatchString(name) || !bus.RevPattern.MatchString(rev) {
		return sourceSwitchyard
	}
	return "# source " + bus.RefusedServices + " " + name + " rev=" + rev
}

// serviceRevs are the revisions of the entries, by source name.
func (r *Renderer) serviceRevs() map[string]string {
	revs := map[string]string{}
	if r.streams == nil {
		return revs
	}
	for _, svc := range r.streams.TCP {
		revs[serviceSourceName(bus.ProtocolTCP, svc.Port)] = serviceRev(bus.ProtocolTCP, svc)
	}
	for _, svc := range r.streams.UDP {
		revs[serviceSourceName(bus.ProtocolUDP, svc.Port)] = serviceRev(bus.ProtocolUDP, svc)
	}
	return revs
}
