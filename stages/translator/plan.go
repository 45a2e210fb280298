package translator

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// ingressPlan is what one Ingress asks for, computed from the Ingress and
// the Services, EndpointSlices and Secrets it names, and nothing else: so it
// changes only when one of those changes.
type ingressPlan struct {
	key string // namespace/name
	// info.Canary: the Ingress is a canary (<prefix>/canary is true); its
	// paths attach to other Ingresses' locations instead of claiming them.
	info bus.IngressInfo // without the conflicts, which depend on other Ingresses

	ruleHosts map[string]bool    // hosts of spec.rules (a rule may list no path)
	claims    map[string][]claim // host → locations asked for, in spec order
	tls       map[string]string  // host → certificate id ("" = the default certificate)
	backends  map[string]*bus.Backend
	certs     map[string]*bus.Certificate
	services  []string // "ns/name" of every Service referenced
	secrets   []string // "ns/name" of every TLS or annotation Secret referenced
	// configMaps are the ConfigMaps annotations name (custom-headers).
	configMaps []string
	// annSecrets are the Secrets annotations name that exist, by
	// "ns/name"; a missing one is absent and the plugin reports it.
	annSecrets map[string]*bus.Secret
	// serviceUpstream is <prefix>/service-upstream: the Service's cluster
	// IP is the backend's one endpoint (serviceUpstreamBackend).
	serviceUpstream bool
}

// claim is one location an Ingress asks for. A fallback claim (the
// Ingress's default backend for a host's unmatched paths) gives way
// silently; an explicit one that loses is reported.
type claim struct {
	path, pathType, backend, field string
	fallback                       bool
}

func (p *ingressPlan) hosts() map[string]bool {
	hosts := map[string]bool{}
	for h := range p.ruleHosts {
		hosts[h] = true
	}
	for h := range p.claims {
		hosts[h] = true
	}
	return hosts
}

func (t *Translator) plan(ing *networkingv1.Ingress) *ingressPlan {
	key := objectName(ing.Namespace, ing.Name)
	p := &ingressPlan{
		key: key,
		info: bus.IngressInfo{Namespace: ing.Namespace, Name: ing.Name, Generation: ing.Generation,
			Created: unixSeconds(ing.CreationTimestamp), Annotations: ing.Annotations},
		ruleHosts: map[string]bool{}, claims: map[string][]claim{}, tls: map[string]string{},
		backends: map[string]*bus.Backend{}, certs: map[string]*bus.Certificate{},
		annSecrets: map[string]*bus.Secret{},
	}
	// ParseBool, as ingress-nginx's GetBoolAnnotation; the canary plugin
	// reports a value that does not parse. Decided here only: the
	// annotations stage reads it from the IngressInfo.
	p.info.Canary, _ = strconv.ParseBool(ing.Annotations[t.cfg.canaryKey()])
	// Likewise service-upstream (the proxy plugin reports a bad value):
	// it changes which endpoints the backend has, which only the
	// translator knows. Without the annotation, the ConfigMap's default.
	p.serviceUpstream = t.serviceUpstreamDefault()
	if v, ok := ing.Annotations[t.cfg.annotationsPrefix()+"/service-upstream"]; ok {
		p.serviceUpstream, _ = strconv.ParseBool(strings.TrimSpace(v))
	}
	if problems := checkLimits(ing); len(problems) > 0 {
		p.info.Rejected = true
		p.info.Problems = problems
		return p
	}
	if problems := validateIngress(ing, t.pathRules(ing)); len(problems) > 0 {
		p.info.Rejected = true
		p.info.Problems = problems
		return p
	}
	if t.cfg.DisableCatchAll && ing.Spec.DefaultBackend != nil && len(ing.Spec.Rules) == 0 {
		p.info.Rejected = true
		p.problem("spec.defaultBackend", "CatchAllDisabled",
			"an Ingress with a defaultBackend and no rules would take the requests no host matches, which --disable-catch-all turns off; it is not served")
		return p
	}
	if p.addCustomHeaders(t, ing); p.info.Rejected {
		return p // nothing of a rejected Ingress is served
	}
	if p.addFastCGIParams(t, ing); p.info.Rejected {
		return p
	}
	p.addAuthProxySetHeaders(t, ing)
	p.addTLS(t, ing)
	p.addAnnotationSecrets(t, ing)
	p.addAnnotationDefaultBackend(t, ing)
	var defaultBackend string
	if db := ing.Spec.DefaultBackend; db != nil {
		defaultBackend = p.backendFor(t, ing, db, "spec.defaultBackend")
		if len(ing.Spec.Rules) == 0 {
			p.add(bus.DefaultServerName, claim{path: "/", pathType: bus.PathPrefix, backend: defaultBackend, field: "spec.defaultBackend"})
		}
	}
	for i, rule := range ing.Spec.Rules {
		host := normalizeHost(rule.Host)
		p.ruleHosts[host] = true
		if rule.HTTP != nil {
			for j, path := range rule.HTTP.Paths {
				field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
				backend := p.backendFor(t, ing, &path.Backend, field+".backend")
				p.add(host, claim{path: pathOf(path), pathType: pathTypeOf(path), backend: backend, field: field})
			}
		}
		// The Ingress's default backend answers the host's unmatched paths.
		if defaultBackend != "" {
			p.add(host, claim{path: "/", pathType: bus.PathPrefix, backend: defaultBackend, fallback: true})
		}
	}
	return p
}

func (p *ingressPlan) add(host string, c claim) {
	p.claims[host] = append(p.claims[host], c)
}

func (p *ingressPlan) problem(field, reason, format string, args ...any) {
	p.info.Problems = append(p.info.Problems, bus.Problem{Field: field, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func conflictProblem(c claim, host, owner string) bus.Problem {
	return bus.Problem{Field: c.field, Reason: "PathConflict",
		Message: fmt.Sprintf("%s %s on host %q is already served by the older Ingress %s", c.pathType, c.path, displayHost(host), owner)}
}

// backendFor resolves an Ingress backend and returns its name. A missing
// Service or port still yields a backend, with no endpoints, so that path
// answers 503 and nothing else is affected.
func (p *ingressPlan) backendFor(t *Translator, ing *networkingv1.Ingress, b *networkingv1.IngressBackend, field string) string {
	if b.Service == nil {
		p.problem(field, "UnsupportedBackend", "only Service backends are supported; this path answers 503")
		return p.addBackend(&bus.Backend{Name: "unsupported-" + ing.Namespace + "-" + ing.Name, Endpoints: []bus.Endpoint{}})
	}
	svcName := b.Service.Name
	svcKey := objectName(ing.Namespace, svcName)
	p.services = append(p.services, svcKey)
	portToken := b.Service.Port.Name
	if portToken == "" {
		portToken = strconv.Itoa(int(b.Service.Port.Number))
	}
	backend := &bus.Backend{
		Name:      backendName(ing.Namespace, svcName, portToken),
		Service:   bus.ServiceRef{Namespace: ing.Namespace, Name: svcName, Port: portToken},
		Endpoints: []bus.Endpoint{},
	}
	svc, ok := t.objs.services[svcKey]
	if !ok {
		p.problem(field+".service.name", "ServiceNotFound", "Service %s does not exist; this path answers 503", svcKey)
		return p.addBackend(backend)
	}
	port, ok := servicePort(svc, b.Service.Port)
	if !ok {
		p.problem(field+".service.port", "PortNotFound", "Service %s has no port %s; this path answers 503", svcKey, portToken)
		return p.addBackend(backend)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if t.cfg.DisableServiceExternalName {
			p.problem(field+".service.name", "ExternalNameDisabled",
				"Service %s is of type ExternalName, which --disable-svc-external-name turns off; this path answers 503", svcKey)
			return p.addBackend(backend)
		}
		return p.addBackend(p.externalBackend(backend, svc, port, field))
	}
	if p.serviceUpstream {
		if su, ok := serviceUpstreamBackend(backend, svc, port); ok {
			return p.addBackend(su)
		}
		p.problem(field+".service.name", "NoClusterIP",
			"service-upstream: Service %s has no cluster IP (it is headless); its endpoints are used instead", svcKey)
	}
	backend.Endpoints = t.objs.readyEndpoints(svcKey, port)
	return p.addBackend(backend)
}

// serviceUpstreamSuffix names the backend of a Service port reached by its
// cluster IP. Namespaces, Service and port names hold no ".", so the name
// never meets the ns-service-port backend of the same port, which other
// Ingresses may use with the Service's endpoints.
const serviceUpstreamSuffix = ".cluster-ip"

// serviceUpstreamBackend is backend with the Service's cluster IP and port
// as its single endpoint (service-upstream, as ingress-nginx): kube-proxy
// then balances, and NGINX follows no endpoint changes. False when the
// Service has no cluster IP.
func serviceUpstreamBackend(backend *bus.Backend, svc *corev1.Service, port corev1.ServicePort) (*bus.Backend, bool) {
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.IsValid() || ip.Zone() != "" {
		return nil, false
	}
	su := *backend
	su.Name += serviceUpstreamSuffix
	su.Endpoints = []bus.Endpoint{{Address: ip.String(), Port: strconv.Itoa(int(port.Port))}}
	return &su, true
}

// externalBackend points a backend at an ExternalName Service's DNS name
// and port (the target port when it is a number, as ingress-nginx does).
func (p *ingressPlan) externalBackend(b *bus.Backend, svc *corev1.Service, port corev1.ServicePort, field string) *bus.Backend {
	// ASCII checked before folding, as for Ingress hosts (checkHost).
	name := strings.ToLower(strings.TrimSuffix(svc.Spec.ExternalName, "."))
	if !isASCII(svc.Spec.ExternalName) || !hostPattern.MatchString(name) || strings.HasPrefix(name, "*") {
		p.problem(field+".service.name", "InvalidExternalName",
			"Service %s/%s has externalName %q, which is not a DNS name; this path answers 503", svc.Namespace, svc.Name, svc.Spec.ExternalName)
		return b
	}
	b.ExternalName, b.ExternalPort = name, port.Port
	if port.TargetPort.IntValue() > 0 {
		b.ExternalPort = int32(port.TargetPort.IntValue())
	}
	return b
}

// location is the model's location of claim c, with the Service its
// backend stands for.
func (p *ingressPlan) location(c claim) bus.Location {
	l := bus.Location{Path: c.path, PathType: c.pathType, Backend: c.backend, Ingress: p.key}
	if b, ok := p.backends[c.backend]; ok {
		l.Service, l.ServicePort = b.Service.Name, b.Service.Port
	}
	return l
}

func (p *ingressPlan) addBackend(b *bus.Backend) string {
	if _, ok := p.backends[b.Name]; !ok {
		p.backends[b.Name] = b
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

// defaultBackendService resolves --default-backend-service to its first
// port's ready endpoints, as ingress-nginx does.
func (t *Translator) defaultBackendService() *bus.Backend {
	key := t.cfg.DefaultBackendService
	ns, name, _ := stringsCut(key)
	b := &bus.Backend{Name: bus.DefaultBackendName, Service: bus.ServiceRef{Namespace: ns, Name: name}, Endpoints: []bus.Endpoint{}}
	svc, ok := t.objs.services[key]
	if !ok || len(svc.Spec.Ports) == 0 {
		return b
	}
	b.Service.Port = strconv.Itoa(int(svc.Spec.Ports[0].Port))
	b.Endpoints = t.objs.readyEndpoints(key, svc.Spec.Ports[0])
	return b
}

// addTLS records the certificates of spec.tls and which host each serves.
// A missing or invalid Secret is reported, and the host is served with the
// default certificate.
func (p *ingressPlan) addTLS(t *Translator, ing *networkingv1.Ingress) {
	for i, entry := range ing.Spec.TLS {
		id := ""
		if entry.SecretName != "" {
			id = p.certificate(t, ing.Namespace, entry.SecretName, fmt.Sprintf("spec.tls[%d].secretName", i))
		}
		for _, h := range entry.Hosts {
			if host := normalizeHost(h); !hasKey(p.tls, host) {
				p.tls[host] = id
			}
		}
	}
}

func (p *ingressPlan) certificate(t *Translator, ns, name, field string) string {
	id := objectName(ns, name)
	p.secrets = append(p.secrets, id)
	secret, ok := t.objs.secrets[id]
	if !ok {
		p.problem(field, "SecretNotFound", "Secret %s does not exist; the default certificate is served", id)
		return ""
	}
	pem, err := keyPairPEM(secret)
	if err != nil {
		// The parse error names no secret material, only what is wrong.
		p.problem(field, "InvalidCertificate",
			"Secret %s does not hold a valid tls.crt/tls.key pair (%v); the default certificate is served", id, err)
		return ""
	}
	p.certs[id] = &bus.Certificate{Namespace: ns, Name: name, PEM: pem}
	return id
}

// keyPairPEM is a TLS Secret's chain followed by its key, once they are
// known to be a valid pair.
func keyPairPEM(secret *corev1.Secret) (string, error) {
	cert, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return "", err
	}
	return string(cert) + "\n" + string(key), nil
}

// addAnnotationSecrets records the Secrets annotations name (auth-secret),
// so a change to one re-plans the Ingress and reaches its plugin. Another
// namespace's Secret is recorded only when allow-cross-namespace-resources
// is on; otherwise the annotations stage refuses the value.
func (p *ingressPlan) addAnnotationSecrets(t *Translator, ing *networkingv1.Ingress) {
	for _, id := range bus.AnnotationSecretRefs(ing.Namespace, ing.Annotations, t.cfg.annotationsPrefix(), t.crossNamespace()) {
		p.secrets = append(p.secrets, id)
		if secret, ok := t.objs.secrets[id]; ok {
			ns, name, _ := strings.Cut(id, "/")
			p.annSecrets[id] = &bus.Secret{Namespace: ns, Name: name, Data: secret.Data}
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func pathOf(p networkingv1.HTTPIngressPath) string {
	if p.Path == "" {
		return "/"
	}
	return p.Path
}

// pathTypeOf maps ImplementationSpecific (and unset) to Prefix, as
// ingress-nginx does when no regex annotation is involved.
func pathTypeOf(p networkingv1.HTTPIngressPath) string {
	if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
		return bus.PathExact
	}
	return bus.PathPrefix
}

// endpointsOf collects the ready addresses of the given slices for the
// slice port named like the Service port. Terminating endpoints are not
// ready, so they stop receiving new requests.
func endpointsOf(slices []*discoveryv1.EndpointSlice, sp corev1.ServicePort) []bus.Endpoint {
	seen := map[bus.Endpoint]bool{}
	out := []bus.Endpoint{}
	for _, es := range slices {
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

// unixSeconds is t in Unix seconds, 0 for no time.
func unixSeconds(t metav1.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
