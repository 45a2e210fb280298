package translator

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// index groups the snapshot's objects for lookups by name.
type index struct {
	classes  map[string]*networkingv1.IngressClass
	services map[string]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice // by namespace/service
	secrets  map[string]*corev1.Secret
}

func buildIndex(snap Snapshot) index {
	idx := index{
		classes:  map[string]*networkingv1.IngressClass{},
		services: map[string]*corev1.Service{},
		slices:   map[string][]*discoveryv1.EndpointSlice{},
		secrets:  map[string]*corev1.Secret{},
	}
	for _, c := range snap.IngressClasses {
		idx.classes[c.Name] = c
	}
	for _, s := range snap.Services {
		idx.services[objectName(s.Namespace, s.Name)] = s
	}
	for _, es := range snap.EndpointSlices {
		if svc := es.Labels[serviceNameLabel]; svc != "" {
			key := objectName(es.Namespace, svc)
			idx.slices[key] = append(idx.slices[key], es)
		}
	}
	for _, s := range snap.Secrets {
		idx.secrets[objectName(s.Namespace, s.Name)] = s
	}
	return idx
}

func (idx index) haveDefaultClass(controller string) bool {
	for _, c := range idx.classes {
		if c.Spec.Controller == controller && c.Annotations[defaultClassAnnotation] == "true" {
			return true
		}
	}
	return false
}

// backendFor resolves an Ingress backend to a backend in the model and
// returns its name. A missing Service or port still yields a backend, with
// no endpoints, so that path answers 503 and nothing else is affected.
func (t *translation) backendFor(ing *networkingv1.Ingress, b *networkingv1.IngressBackend, field string, info *bus.IngressInfo) string {
	if b.Service == nil {
		info.Problems = append(info.Problems, bus.Problem{
			Field: field, Reason: "UnsupportedBackend",
			Message: "only Service backends are supported; this path answers 503",
		})
		return t.addBackend(bus.Backend{Name: "unsupported-" + ing.Namespace + "-" + ing.Name})
	}
	svcName := b.Service.Name
	portToken := b.Service.Port.Name
	if portToken == "" {
		portToken = strconv.Itoa(int(b.Service.Port.Number))
	}
	backend := bus.Backend{
		Name:      backendName(ing.Namespace, svcName, portToken),
		Service:   bus.ServiceRef{Namespace: ing.Namespace, Name: svcName, Port: portToken},
		Endpoints: []bus.Endpoint{},
	}
	svc, ok := t.idx.services[objectName(ing.Namespace, svcName)]
	if !ok {
		info.Problems = append(info.Problems, bus.Problem{
			Field: field + ".service.name", Reason: "ServiceNotFound",
			Message: fmt.Sprintf("Service %s/%s does not exist; this path answers 503", ing.Namespace, svcName),
		})
		return t.addBackend(backend)
	}
	port, ok := servicePort(svc, b.Service.Port)
	if !ok {
		info.Problems = append(info.Problems, bus.Problem{
			Field: field + ".service.port", Reason: "PortNotFound",
			Message: fmt.Sprintf("Service %s/%s has no port %s; this path answers 503", ing.Namespace, svcName, portToken),
		})
		return t.addBackend(backend)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		info.Problems = append(info.Problems, bus.Problem{
			Field: field + ".service.name", Reason: "UnsupportedBackend",
			Message: fmt.Sprintf("Service %s/%s is of type ExternalName, which is not supported yet; this path answers 503", ing.Namespace, svcName),
		})
		return t.addBackend(backend)
	}
	backend.Endpoints = t.readyEndpoints(ing.Namespace, svcName, port)
	return t.addBackend(backend)
}

func (t *translation) addBackend(b bus.Backend) string {
	key := bus.Key(bus.KindBackend, b.Name)
	if _, ok := t.model.Backends[key]; !ok {
		t.model.Backends[key] = &b
	}
	return b.Name
}

// backendName follows ingress-nginx's upstream naming: ns-service-port.
func backendName(ns, svc, port string) string { return ns + "-" + svc + "-" + port }

func servicePort(svc *corev1.Service, p networkingv1.ServiceBackendPort) (corev1.ServicePort, bool) {
	for _, sp := range svc.Spec.Ports {
		if (p.Name != "" && sp.Name == p.Name) || (p.Name == "" && sp.Port == p.Number) {
			return sp, true
		}
	}
	return corev1.ServicePort{}, false
}

// readyEndpoints collects the ready addresses of every EndpointSlice of the
// Service for the slice port named like the Service port. Terminating
// endpoints are not ready, so they stop receiving new requests.
func (t *translation) readyEndpoints(ns, svc string, sp corev1.ServicePort) []bus.Endpoint {
	seen := map[bus.Endpoint]bool{}
	out := []bus.Endpoint{}
	for _, es := range t.idx.slices[objectName(ns, svc)] {
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		port, ok := slicePort(es, sp)
		if !ok {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, addr := range ep.Addresses {
				ip, err := netip.ParseAddr(addr)
				if err != nil {
					continue
				}
				e := bus.Endpoint{Address: ip.String(), Port: strconv.Itoa(int(port))}
				if !seen[e] {
					seen[e] = true
					out = append(out, e)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Address != out[j].Address {
			return out[i].Address < out[j].Address
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// slicePort finds the slice's port for a Service port: slices name their
// ports after the Service ports.
func slicePort(es *discoveryv1.EndpointSlice, sp corev1.ServicePort) (int32, bool) {
	for _, p := range es.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name == sp.Name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// addTLS records the certificates of spec.tls and returns the TLS setting
// for each host listed there. A missing or invalid Secret is reported, and
// the host is served with the default certificate.
func (t *translation) addTLS(ing *networkingv1.Ingress, info *bus.IngressInfo) map[string]*bus.ServerTLS {
	hosts := map[string]*bus.ServerTLS{}
	for i, entry := range ing.Spec.TLS {
		field := fmt.Sprintf("spec.tls[%d].secretName", i)
		certKey := ""
		if entry.SecretName != "" {
			var problem *bus.Problem
			certKey, problem = t.certificate(ing.Namespace, entry.SecretName, field)
			if problem != nil {
				info.Problems = append(info.Problems, *problem)
			}
		}
		for _, h := range entry.Hosts {
			host := normalizeHost(h)
			if _, ok := hosts[host]; !ok {
				hosts[host] = &bus.ServerTLS{Certificate: certKey}
			}
		}
	}
	return hosts
}

func (t *translation) certificate(ns, name, field string) (string, *bus.Problem) {
	secret, ok := t.idx.secrets[objectName(ns, name)]
	if !ok {
		return "", &bus.Problem{Field: field, Reason: "SecretNotFound",
			Message: fmt.Sprintf("Secret %s/%s does not exist; the default certificate is served", ns, name)}
	}
	cert, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		// The parse error names no secret material, only what is wrong.
		return "", &bus.Problem{Field: field, Reason: "InvalidCertificate",
			Message: fmt.Sprintf("Secret %s/%s does not hold a valid tls.crt/tls.key pair (%v); the default certificate is served", ns, name, err)}
	}
	id := objectName(ns, name)
	t.model.Certificates[bus.Key(bus.KindCertificate, ns, name)] = &bus.Certificate{
		Namespace: ns, Name: name, PEM: string(cert) + "\n" + string(key),
	}
	return id, nil
}
