package metrics

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
)

func put(t *testing.T, puts map[string][]byte, key string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	puts[key] = data
}

// testCertificate is a key pair for host and its certificate's NotAfter.
func testCertificate(t *testing.T, host string) (string, time.Time) {
	t.Helper()
	certPEM, keyPEM, err := nginx.SelfSignedCertificate(host, []string{host}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return string(certPEM) + string(keyPEM), cert.NotAfter
}

// TestModelCollector: a host served with a certificate has its NotAfter in
// ssl_expire_time_seconds and its public facts in ssl_certificate_info, a
// host on the default certificate the default's; an Ingress whose Service
// is missing or has no endpoint is an orphan of that type; a deleted
// certificate or Ingress goes; no label holds the private key.
func TestModelCollector(t *testing.T) {
	shopPEM, shopNotAfter := testCertificate(t, "shop.example.com")
	defaultPEM, defaultNotAfter := testCertificate(t, "default.invalid")
	puts := map[string][]byte{}
	put(t, puts, bus.Key(bus.KindCertificate, "apps", "shop-tls"), bus.Certificate{Namespace: "apps", Name: "shop-tls", PEM: shopPEM})
	put(t, puts, bus.Key(bus.KindCertificate, "sys", "fallback"), bus.Certificate{Namespace: "sys", Name: "fallback", PEM: defaultPEM, Default: true})
	put(t, puts, bus.Key(bus.KindServer, "shop.example.com"), bus.Server{Hostname: "shop.example.com",
		TLS: &bus.ServerTLS{Certificate: "apps/shop-tls"},
		Locations: []bus.Location{{Path: "/", Ingress: "apps/shop", Backend: "apps-web-80"},
			{Path: "/gone", Ingress: "apps/lost", Backend: "apps-missing-80"}}})
	put(t, puts, bus.Key(bus.KindServer, "plain.example.com"), bus.Server{Hostname: "plain.example.com",
		TLS: &bus.ServerTLS{}, Locations: []bus.Location{{Path: "/", Ingress: "apps/empty", Backend: "apps-idle-80"}}})
	put(t, puts, bus.Key(bus.KindServer, "http.example.com"), bus.Server{Hostname: "http.example.com"})
	put(t, puts, bus.Key(bus.KindBackend, "apps-web-80"), bus.Backend{Name: "apps-web-80", Endpoints: []bus.Endpoint{{Address: "10.0.0.1", Port: "80"}}})
	put(t, puts, bus.Key(bus.KindBackend, "apps-missing-80"), bus.Backend{Name: "apps-missing-80", Endpoints: []bus.Endpoint{}})
	put(t, puts, bus.Key(bus.KindBackend, "apps-idle-80"), bus.Backend{Name: "apps-idle-80", Endpoints: []bus.Endpoint{}})
	put(t, puts, bus.Key(bus.KindIngress, "apps", "shop"), bus.IngressInfo{Namespace: "apps", Name: "shop"})
	put(t, puts, bus.Key(bus.KindIngress, "apps", "lost"), bus.IngressInfo{Namespace: "apps", Name: "lost",
		Problems: []bus.Problem{{Field: "spec.rules[0].http.paths[0].backend.service.name", Reason: "ServiceNotFound"}}})
	put(t, puts, bus.Key(bus.KindIngress, "apps", "empty"), bus.IngressInfo{Namespace: "apps", Name: "empty"})
	put(t, puts, bus.Key(bus.KindIngress, "apps", "refused"), bus.IngressInfo{Namespace: "apps", Name: "refused", Rejected: true})

	m := NewModelCollector(Labels{Namespace: "ingress", Class: "switchyard", Pod: "p-1"})
	if err := m.Update(bus.Snapshot{Full: true, Puts: puts}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	orphans := map[string]float64{}
	expire := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				if strings.Contains(l.GetValue(), "PRIVATE") || strings.Contains(l.GetValue(), "BEGIN") {
					t.Errorf("%s has PEM in label %s", mf.GetName(), l.GetName())
				}
			}
			switch mf.GetName() {
			case "nginx_ingress_controller_orphan_ingress":
				if labels["controller_namespace"] != "ingress" || labels["controller_class"] != "switchyard" || labels["controller_pod"] != "p-1" {
					t.Errorf("orphan_ingress lacks the controller labels: %v", labels)
				}
				orphans[labels["namespace"]+"/"+labels["ingress"]+" "+labels["type"]] = metric.GetGauge().GetValue()
			case "nginx_ingress_controller_ssl_expire_time_seconds":
				if labels["namespace"] != "ingress" || labels["class"] != "switchyard" {
					t.Errorf("ssl_expire_time_seconds labels %v: want the controller's namespace and class, as ingress-nginx", labels)
				}
				expire[labels["host"]+" "+labels["secret_name"]] = metric.GetGauge().GetValue()
			case "nginx_ingress_controller_ssl_certificate_info":
				if labels["host"] == "shop.example.com" && (labels["namespace"] != "apps" || labels["secret_name"] != "shop-tls" ||
					labels["serial_number"] == "" || labels["identifier"] != "-"+labels["serial_number"] || labels["public_key_algorithm"] == "") {
					t.Errorf("ssl_certificate_info of shop: %v", labels)
				}
			}
		}
	}
	wantOrphans := map[string]float64{
		"apps/empty no-endpoint": 1, "apps/empty no-service": 0,
		"apps/lost no-endpoint": 1, "apps/lost no-service": 1,
		"apps/shop no-endpoint": 0, "apps/shop no-service": 0,
	}
	if fmt.Sprint(orphans) != fmt.Sprint(wantOrphans) {
		t.Errorf("orphan_ingress = %v, want %v", orphans, wantOrphans)
	}
	wantExpire := map[string]float64{
		"shop.example.com shop-tls":  float64(shopNotAfter.Unix()),
		"plain.example.com fallback": float64(defaultNotAfter.Unix()),
	}
	if fmt.Sprint(expire) != fmt.Sprint(wantExpire) {
		t.Errorf("ssl_expire_time_seconds = %v, want %v", expire, wantExpire)
	}

	// The certificate and an Ingress deleted: their series go.
	if err := m.Update(bus.Snapshot{Deletes: []string{bus.Key(bus.KindCertificate, "apps", "shop-tls"), bus.Key(bus.KindIngress, "apps", "lost")}}); err != nil {
		t.Fatal(err)
	}
	if n := countSeries(t, m, "nginx_ingress_controller_ssl_expire_time_seconds"); n != 1 {
		t.Errorf("%d expiry series after the certificate went, want 1 (the default's)", n)
	}
	if n := countSeries(t, m, "nginx_ingress_controller_orphan_ingress"); n != 4 {
		t.Errorf("%d orphan series after an Ingress went, want 4", n)
	}
}

// TestModelCollectorBadCertificate: a certificate that does not parse is
// left out with an error that names it and quotes nothing of its PEM.
func TestModelCollectorBadCertificate(t *testing.T) {
	puts := map[string][]byte{}
	put(t, puts, bus.Key(bus.KindCertificate, "apps", "bad"), bus.Certificate{Namespace: "apps", Name: "bad",
		PEM: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n"})
	put(t, puts, bus.Key(bus.KindServer, "a.example.com"), bus.Server{Hostname: "a.example.com", TLS: &bus.ServerTLS{Certificate: "apps/bad"}})
	m := NewModelCollector(Labels{})
	err := m.Update(bus.Snapshot{Full: true, Puts: puts})
	if err == nil || !strings.Contains(err.Error(), "apps/bad") || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("error %v: want one naming apps/bad without its data", err)
	}
	if n := countSeries(t, m, "nginx_ingress_controller_ssl_expire_time_seconds"); n != 0 {
		t.Errorf("%d expiry series for an unparsable certificate", n)
	}
}

// countSeries is how many series of name c exports.
func countSeries(t *testing.T, c prometheus.Collector, name string) int {
	n, _ := seriesOf(t, c, name)
	return n
}

// seriesOf gathers c: how many series of name it exports, and the value
// of the first if it is a gauge.
func seriesOf(t *testing.T, c prometheus.Collector, name string) (n int, firstGauge float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return len(mf.GetMetric()), mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0, 0
}

// FuzzModelCertificate: whatever a certificate's PEM holds, Update never
// panics, an error never quotes the PEM, and a scrape still answers.
func FuzzModelCertificate(f *testing.F) {
	valid, _, err := nginx.SelfSignedCertificate("a.example.com", []string{"a.example.com"}, time.Unix(1700000000, 0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(valid))
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, pemText string) {
		data, err := json.Marshal(bus.Certificate{Namespace: "ns", Name: "c", PEM: pemText})
		if err != nil {
			return
		}
		server, _ := json.Marshal(bus.Server{Hostname: "a.example.com", TLS: &bus.ServerTLS{Certificate: "ns/c"}})
		m := NewModelCollector(Labels{})
		err = m.Update(bus.Snapshot{Full: true, Puts: map[string][]byte{
			bus.Key(bus.KindCertificate, "ns", "c"): data, bus.Key(bus.KindServer, "a.example.com"): server}})
		if err != nil && len(pemText) > 16 && strings.Contains(err.Error(), pemText) {
			t.Fatalf("the error quotes the PEM: %v", err)
		}
		if n := countSeries(t, m, "nginx_ingress_controller_ssl_expire_time_seconds"); n > 1 || (err != nil && n != 0) {
			t.Fatalf("%d expiry series (update error %v)", n, err)
		}
	})
}
