package translator

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
)

// TCP and UDP services (--tcp-services-configmap, --udp-services-configmap).
// Each key of the ConfigMap is a port NGINX listens on; each value names a
// Service port, "<namespace>/<service>:<port>[:PROXY][:PROXY]", the port by
// number or by name, of the Service port with the ConfigMap's protocol, as
// in ingress-nginx. An entry that cannot be served is reported (a Problem
// naming the ConfigMap and key) and left out; the others are served.

// Reasons of the stream services' Problems.
const (
	ReasonInvalidEntry    = "InvalidEntry"
	ReasonReservedPort    = "ReservedPort"
	ReasonServiceNotFound = "ServiceNotFound"
	ReasonPortNotFound    = "PortNotFound"
	ReasonNoEndpoints     = "NoEndpoints"
	ReasonProxyIgnored    = "ProxyProtocolIgnored"
)

// streamEntry is one parsed ConfigMap entry.
type streamEntry struct {
	port             int
	namespace, name  string
	servicePort      string // a number or an IANA service name
	decode, encode   bool   // the first and the second PROXY
	proxyOnUDPIgnore bool   // PROXY given on a UDP entry (not supported there)
}

var (
	// streamPortPattern is a port in canonical decimal: "080" would be a
	// second spelling of the same listener.
	streamPortPattern = regexp.MustCompile(`^[1-9][0-9]{0,4}$`)
	// namespacePattern is a namespace (RFC 1123 label); Service names
	// follow serviceNamePattern, port names portNamePattern (validate.go).
	namespacePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// parseStreamEntry checks one entry of a TCP or UDP services ConfigMap.
// The error says what is wrong and never quotes more than the entry.
func parseStreamEntry(protocol, key, value string) (streamEntry, error) {
	var e streamEntry
	key = strings.TrimSpace(key)
	if !streamPortPattern.MatchString(key) {
		return e, fmt.Errorf("the key %s is not a port number 1-65535", clipQuoted(key))
	}
	e.port, _ = strconv.Atoi(key)
	if e.port > 65535 {
		return e, fmt.Errorf("the key %s is not a port number 1-65535", clipQuoted(key))
	}
	fields := strings.Split(strings.TrimSpace(value), ":")
	if len(fields) < 2 || len(fields) > 4 {
		return e, fmt.Errorf("the value %s is not <namespace>/<service>:<port>[:PROXY][:PROXY]", clipQuoted(value))
	}
	ns, name, ok := strings.Cut(fields[0], "/")
	if !ok || !namespacePattern.MatchString(ns) || !serviceNamePattern.MatchString(name) {
		return e, fmt.Errorf("%s is not <namespace>/<service> of Kubernetes names", clipQuoted(fields[0]))
	}
	e.namespace, e.name = ns, name
	if err := e.setServicePort(fields[1]); err != nil {
		return e, err
	}
	for i, f := range fields[2:] {
		switch {
		case f == "":
		case !strings.EqualFold(f, "PROXY"):
			return e, fmt.Errorf("%s after the port is not PROXY (or empty)", clipQuoted(f))
		case protocol == bus.ProtocolUDP:
			e.proxyOnUDPIgnore = true
		case i == 0:
			e.decode = true
		default:
			e.encode = true
		}
	}
	return e, nil
}

// setServicePort takes the Service port, a number 1-65535 or a port name.
func (e *streamEntry) setServicePort(p string) error {
	if n, err := strconv.Atoi(p); err == nil {
		if n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return fmt.Errorf("the Service port %s is not 1-65535", clipQuoted(p))
		}
		e.servicePort = p
		return nil
	}
	if !portNamePattern.MatchString(p) {
		return fmt.Errorf("the Service port %s is neither a number nor a port name", clipQuoted(p))
	}
	e.servicePort = p
	return nil
}

// streamConfigMaps are the configured TCP and UDP services ConfigMaps by
// protocol ("" when not configured).
func (t *Translator) streamConfigMaps() [][2]string {
	return [][2]string{{bus.ProtocolTCP, t.cfg.TCPServicesConfigMap}, {bus.ProtocolUDP, t.cfg.UDPServicesConfigMap}}
}

func (t *Translator) streamsConfigured() bool {
	return t.cfg.TCPServicesConfigMap != "" || t.cfg.UDPServicesConfigMap != ""
}

// isStreamConfigMap says whether key ("namespace/name") is one of them.
func (t *Translator) isStreamConfigMap(key string) bool {
	return t.streamsConfigured() && (key == t.cfg.TCPServicesConfigMap || key == t.cfg.UDPServicesConfigMap)
}

// refreshStreams resolves both ConfigMaps again and publishes the result
// when it changed.
func (t *Translator) refreshStreams(delta *Delta) {
	if !t.streamsConfigured() {
		return
	}
	s := &bus.StreamServices{}
	services := map[string]bool{}
	for _, cm := range t.streamConfigMaps() {
		protocol, ref := cm[0], cm[1]
		if ref == "" {
			continue
		}
		list, problems := t.streamServices(protocol, ref, services)
		if protocol == bus.ProtocolTCP {
			s.TCP = list
		} else {
			s.UDP = list
		}
		s.Problems = append(s.Problems, problems...)
	}
	t.streamServiceKeys = services
	if t.model.Streams != nil && reflect.DeepEqual(t.model.Streams, s) {
		return
	}
	t.model.Streams = s
	delta.put(bus.StreamServicesKey, s)
}

// streamServices resolves the entries of one ConfigMap, sorted by port,
// and records the Services they name in services.
func (t *Translator) streamServices(protocol, ref string, services map[string]bool) ([]bus.StreamService, []bus.Problem) {
	cm, ok := t.objs.configMaps[ref]
	if !ok {
		return nil, []bus.Problem{{Field: "metadata.name", Reason: "ConfigMapNotFound",
			Message: fmt.Sprintf("%s services ConfigMap %s does not exist; no %s service is served", protocol, ref, protocol)}}
	}
	var out []bus.StreamService
	var problems []bus.Problem
	report := func(key, reason, format string, args ...any) {
		problems = append(problems, bus.Problem{Field: "data." + key, Reason: reason,
			Message: fmt.Sprintf("%s services ConfigMap %s, key %s: ", protocol, ref, clipQuoted(key)) + fmt.Sprintf(format, args...)})
	}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		e, err := parseStreamEntry(protocol, key, cm.Data[key])
		if err != nil {
			report(key, ReasonInvalidEntry, "%v; the entry is not served", err)
			continue
		}
		if what, reserved := t.cfg.ReservedPorts[e.port]; reserved {
			report(key, ReasonReservedPort, "port %d is Switchyard's own (%s); the entry is not served", e.port, what)
			continue
		}
		if e.proxyOnUDPIgnore {
			report(key, ReasonProxyIgnored, "the PROXY protocol is for TCP services only; served without it")
		}
		svcKey := objectName(e.namespace, e.name)
		services[svcKey] = true
		svc, found := t.objs.services[svcKey]
		if !found {
			report(key, ReasonServiceNotFound, "Service %s does not exist; the entry is not served", svcKey)
			continue
		}
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			report(key, ReasonPortNotFound, "Service %s is of type ExternalName, which has no endpoints; the entry is not served", svcKey)
			continue
		}
		sp, found := streamServicePort(svc, e.servicePort, protocol)
		if !found {
			report(key, ReasonPortNotFound, "Service %s has no %s port %s; the entry is not served", svcKey, protocol, e.servicePort)
			continue
		}
		s := bus.StreamService{Port: e.port, ConfigMap: ref, ProxyProtocolDecode: e.decode, ProxyProtocolEncode: e.encode,
			Service:   bus.ServiceRef{Namespace: e.namespace, Name: e.name, Port: e.servicePort},
			Endpoints: t.objs.readyEndpoints(svcKey, sp)}
		if len(s.Endpoints) == 0 {
			report(key, ReasonNoEndpoints, "Service %s has no ready endpoint for port %s; its connections are closed until it has one",
				svcKey, e.servicePort)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b bus.StreamService) int { return a.Port - b.Port })
	return out, problems
}

// streamServicePort finds the Service port by number or name with the
// given protocol (a port without one is TCP).
func streamServicePort(svc *corev1.Service, port, protocol string) (corev1.ServicePort, bool) {
	n, err := strconv.Atoi(port)
	for _, sp := range svc.Spec.Ports {
		p := string(sp.Protocol)
		if p == "" {
			p = bus.ProtocolTCP
		}
		if p != protocol {
			continue
		}
		if (err == nil && int(sp.Port) == n) || (err != nil && sp.Name == port) {
			return sp, true
		}
	}
	return corev1.ServicePort{}, false
}
