package metrics

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchyard.dev/switchyard/bus"
)

// ModelCollector exports what the pipeline's model says about certificates
// and Ingresses, from the annotations stage's table, with ingress-nginx's
// names: ssl_expire_time_seconds and ssl_certificate_info for every host
// served with a certificate, and orphan_ingress for every Ingress served.
// Of a certificate it keeps only its public facts (expiry, issuer,
// serial, key algorithm): the key pair's PEM, which holds the private key,
// is parsed and dropped.
type ModelCollector struct {
	labels Labels

	mu        sync.RWMutex
	servers   map[string]serverFacts
	certs     map[string]certFacts
	backends  map[string]backendFacts
	ingresses map[string]ingressFacts

	expire, info, orphan *prometheus.Desc
}

type serverFacts struct {
	host string
	// tls: the host is served with TLS; cert is its Certificate's key
	// ("namespace/name"), empty for the default certificate.
	tls  bool
	cert string
	// uses are the Ingresses ("namespace/name") of its locations, each
	// with the backend it sends to.
	uses []ingressBackend
}

type ingressBackend struct{ ingress, backend string }

type certFacts struct {
	namespace, name string
	isDefault       bool
	notAfter        time.Time
	identifier      string
	issuerOrg       string
	issuerCN        string
	serial          string
	keyAlgorithm    string
}

type backendFacts struct {
	name        string
	noEndpoints bool
}

type ingressFacts struct {
	namespace, name string
	served          bool
	noService       bool
}

// Orphan types, as ingress-nginx's orphan_ingress labels them.
const (
	orphanNoService  = "no-service"
	orphanNoEndpoint = "no-endpoint"
)

// NewModelCollector is empty until its first Update.
func NewModelCollector(l Labels) *ModelCollector {
	desc := func(name, help string, labels []string, constLabels prometheus.Labels) *prometheus.Desc {
		return prometheus.NewDesc("nginx_ingress_controller_"+name, help, labels, constLabels)
	}
	// As in ingress-nginx: the certificate series carry the controller's
	// namespace and class as plain labels, orphan_ingress the usual
	// constant labels.
	return &ModelCollector{
		labels: l, servers: map[string]serverFacts{}, certs: map[string]certFacts{},
		backends: map[string]backendFacts{}, ingresses: map[string]ingressFacts{},
		expire: desc("ssl_expire_time_seconds", "Number of seconds since 1970 to the SSL Certificate expire. "+
			"An example to check if this certificate will expire in 10 days is: "+
			`"nginx_ingress_controller_ssl_expire_time_seconds < (time() + (10 * 24 * 3600))"`,
			[]string{"namespace", "class", "host", "secret_name"}, nil),
		info: desc("ssl_certificate_info", "Hold all labels associated to a certificate",
			[]string{"namespace", "class", "host", "secret_name", "identifier", "issuer_organization",
				"issuer_common_name", "serial_number", "public_key_algorithm"}, nil),
		orphan: desc("orphan_ingress", "Gauge reporting status of ingress orphanity, 1 indicates orphaned ingress. "+
			"'namespace' is the string used to identify namespace of ingress, 'ingress' for ingress name and "+
			"'type' for 'no-service' or 'no-endpoint' of orphanity", []string{"namespace", "ingress", "type"},
			prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}),
	}
}

// Update applies one snapshot of the annotations stage's table. A value
// that does not decode is left out and returned as an error naming its key
// (never its content).
func (m *ModelCollector) Update(snap bus.Snapshot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if snap.Full {
		clear(m.servers)
		clear(m.certs)
		clear(m.backends)
		clear(m.ingresses)
	}
	for _, key := range snap.Deletes {
		m.forget(key)
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(snap.Puts)) {
		if err := m.learn(key, snap.Puts[key]); err != nil {
			m.forget(key)
			errs = append(errs, fmt.Errorf("metrics: %s: %w", key, err))
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (m *ModelCollector) forget(key string) {
	delete(m.servers, key)
	delete(m.certs, key)
	delete(m.backends, key)
	delete(m.ingresses, key)
}

func (m *ModelCollector) learn(key string, data []byte) error {
	kind, _, err := bus.SplitKey(key)
	if err != nil {
		return err
	}
	switch kind {
	case bus.KindServer:
		var s bus.Server
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		m.servers[key] = serverFactsOf(&s)
	case bus.KindCertificate:
		var c bus.Certificate
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("decode certificate") // the error could quote the PEM
		}
		facts, err := certFactsOf(&c)
		if err != nil {
			return err
		}
		m.certs[key] = facts
	case bus.KindBackend:
		var b bus.Backend
		if err := json.Unmarshal(data, &b); err != nil {
			return err
		}
		m.backends[key] = backendFacts{name: b.Name, noEndpoints: len(b.Endpoints) == 0 && b.ExternalName == ""}
	case bus.KindIngress:
		var info bus.IngressInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return err
		}
		m.ingresses[key] = ingressFactsOf(&info)
	}
	return nil
}

func serverFactsOf(s *bus.Server) serverFacts {
	f := serverFacts{host: s.Hostname, tls: s.TLS != nil}
	if s.TLS != nil {
		f.cert = s.TLS.Certificate
	}
	for _, loc := range s.Locations {
		if loc.Ingress != "" {
			f.uses = append(f.uses, ingressBackend{loc.Ingress, loc.Backend})
		}
		if loc.Canary != nil {
			f.uses = append(f.uses, ingressBackend{loc.Canary.Ingress, loc.Canary.Backend})
		}
	}
	return f
}

func ingressFactsOf(info *bus.IngressInfo) ingressFacts {
	f := ingressFacts{namespace: info.Namespace, name: info.Name, served: !info.Rejected}
	for _, p := range info.Problems {
		if p.Reason == "ServiceNotFound" {
			f.noService = true
		}
	}
	return f
}

// certFactsOf parses the first certificate of the key pair: the one served.
func certFactsOf(c *bus.Certificate) (certFacts, error) {
	rest := []byte(c.PEM)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return certFacts{}, fmt.Errorf("no certificate in %s/%s", c.Namespace, c.Name)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return certFacts{}, fmt.Errorf("parse certificate of %s/%s: %w", c.Namespace, c.Name, err)
		}
		f := certFacts{namespace: c.Namespace, name: c.Name, isDefault: c.Default, notAfter: cert.NotAfter,
			issuerCN: cert.Issuer.CommonName, keyAlgorithm: cert.PublicKeyAlgorithm.String()}
		if len(cert.Issuer.Organization) > 0 {
			f.issuerOrg = cert.Issuer.Organization[0]
		}
		if cert.SerialNumber != nil {
			f.serial = cert.SerialNumber.String()
			// ingress-nginx's identifier: the issuer's serial number
			// attribute and the certificate's.
			f.identifier = cert.Issuer.SerialNumber + "-" + f.serial
		}
		return f, nil
	}
}

// Describe implements prometheus.Collector.
func (m *ModelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.expire
	ch <- m.info
	ch <- m.orphan
}

// Collect implements prometheus.Collector.
func (m *ModelCollector) Collect(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.collectCertificates(ch)
	m.collectOrphans(ch)
}

func (m *ModelCollector) collectCertificates(ch chan<- prometheus.Metric) {
	byKey := map[string]certFacts{}
	var fallback *certFacts
	for _, c := range m.certs {
		byKey[c.namespace+"/"+c.name] = c
		if c.isDefault {
			fallback = &c
		}
	}
	for _, s := range m.servers {
		if !s.tls || s.host == "" {
			continue
		}
		c, ok := byKey[s.cert]
		if s.cert == "" && fallback != nil {
			c, ok = *fallback, true
		}
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.expire, prometheus.GaugeValue, float64(c.notAfter.Unix()),
			m.labels.Namespace, m.labels.Class, s.host, c.name)
		if c.serial != "" {
			ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, 1, c.namespace, m.labels.Class, s.host,
				c.name, c.identifier, c.issuerOrg, c.issuerCN, c.serial, c.keyAlgorithm)
		}
	}
}

// collectOrphans: every Ingress served has both types, 1 when it is that
// kind of orphan (a Service it names does not exist; a backend it sends
// to has no endpoint), else 0, as ingress-nginx sets and clears them.
func (m *ModelCollector) collectOrphans(ch chan<- prometheus.Metric) {
	empty := map[string]bool{}
	for _, b := range m.backends {
		empty[b.name] = b.noEndpoints
	}
	noEndpoint := map[string]bool{}
	for _, s := range m.servers {
		for _, u := range s.uses {
			if empty[u.backend] {
				noEndpoint[u.ingress] = true
			}
		}
	}
	for _, ing := range m.ingresses {
		if !ing.served {
			continue
		}
		id := ing.namespace + "/" + ing.name
		ch <- prometheus.MustNewConstMetric(m.orphan, prometheus.GaugeValue, boolValue(ing.noService), ing.namespace, ing.name, orphanNoService)
		ch <- prometheus.MustNewConstMetric(m.orphan, prometheus.GaugeValue, boolValue(noEndpoint[id]), ing.namespace, ing.name, orphanNoEndpoint)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
