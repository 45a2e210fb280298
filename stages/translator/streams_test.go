package translator

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

func TestParseStreamEntry(t *testing.T) {
	for _, c := range []struct {
		protocol, key, value string
		want                 streamEntry
		err                  string
	}{
		{bus.ProtocolTCP, "5432", "data/db:5432", streamEntry{port: 5432, namespace: "data", name: "db", servicePort: "5432"}, ""},
		{bus.ProtocolTCP, " 22 ", " git/ssh:ssh ", streamEntry{port: 22, namespace: "git", name: "ssh", servicePort: "ssh"}, ""},
		{bus.ProtocolTCP, "1", "a/b:1:PROXY", streamEntry{port: 1, namespace: "a", name: "b", servicePort: "1", decode: true}, ""},
		{bus.ProtocolTCP, "65535", "a/b:1:proxy:Proxy", streamEntry{port: 65535, namespace: "a", name: "b", servicePort: "1", decode: true, encode: true}, ""},
		{bus.ProtocolTCP, "80", "a/b:1::PROXY", streamEntry{port: 80, namespace: "a", name: "b", servicePort: "1", encode: true}, ""},
		{bus.ProtocolUDP, "53", "a/b:dns:PROXY", streamEntry{port: 53, namespace: "a", name: "b", servicePort: "dns", proxyOnUDPIgnore: true}, ""},
		{bus.ProtocolTCP, "0", "a/b:1", streamEntry{}, "not a port number"},
		{bus.ProtocolTCP, "65536", "a/b:1", streamEntry{}, "not a port number"},
		{bus.ProtocolTCP, "080", "a/b:1", streamEntry{}, "not a port number"},
		{bus.ProtocolTCP, "http", "a/b:1", streamEntry{}, "not a port number"},
		{bus.ProtocolTCP, "80", "a/b", streamEntry{}, "is not <namespace>/<service>:<port>"},
		{bus.ProtocolTCP, "80", "a/b:1:PROXY:PROXY:x", streamEntry{}, "is not <namespace>/<service>:<port>"},
		{bus.ProtocolTCP, "80", "b:1", streamEntry{}, "Kubernetes names"},
		{bus.ProtocolTCP, "80", "a/B:1", streamEntry{}, "Kubernetes names"},
		{bus.ProtocolTCP, "80", "a/b;c:1", streamEntry{}, "Kubernetes names"},
		{bus.ProtocolTCP, "80", "a/b:0", streamEntry{}, "not 1-65535"},
		{bus.ProtocolTCP, "80", "a/b:08", streamEntry{}, "not 1-65535"},
		{bus.ProtocolTCP, "80", "a/b:Port_1", streamEntry{}, "neither a number nor a port name"},
		{bus.ProtocolTCP, "80", "a/b:1:SSL", streamEntry{}, "is not PROXY"},
	} {
		got, err := parseStreamEntry(c.protocol, c.key, c.value)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %q=%q: %v", c.protocol, c.key, c.value, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %q=%q: error %v, want one saying %q", c.protocol, c.key, c.value, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("%s %q=%q: %+v, want %+v", c.protocol, c.key, c.value, got, c.want)
		}
	}
}

// FuzzParseStreamEntry: whatever the entry parser accepts is a port 1-65535
// and Kubernetes names and a port that hold nothing NGINX would read as
// syntax, so the renderer's names and comments stay safe.
func FuzzParseStreamEntry(f *testing.F) {
	for _, s := range [][2]string{{"5432", "data/db:5432"}, {"22", "git/ssh:ssh:PROXY:PROXY"}, {"53", "a/b:dns::PROXY"},
		{"80", "a/b:1;}"}, {"0", "a/b:1"}, {"99999", "x"}, {"1", "a/b:1:proxy"}, {"8", "a/b\n:1"}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, key, value string, udp bool) {
		protocol := bus.ProtocolTCP
		if udp {
			protocol = bus.ProtocolUDP
		}
		e, err := parseStreamEntry(protocol, key, value)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") && !strings.Contains(err.Error(), `\n`) && !strings.Contains(err.Error(), `\r`) {
				t.Fatalf("error carries a raw line break: %q", err)
			}
			return
		}
		if e.port < 1 || e.port > 65535 {
			t.Fatalf("port %d accepted", e.port)
		}
		for _, s := range []string{e.namespace, e.name, e.servicePort} {
			if s == "" || strings.ContainsAny(s, forbidden+":/") {
				t.Fatalf("accepted %q in %+v", s, e)
			}
		}
		if udp && (e.decode || e.encode) {
			t.Fatalf("PROXY on a UDP entry: %+v", e)
		}
	})
}

// TestStreamsFollowEndpoints: an EndpointSlice change of a Service a TCP
// entry names republishes the stream services, one of another Service
// does not, and the ConfigMap's own change does.
func TestStreamsFollowEndpoints(t *testing.T) {
	tr := NewTranslator(Config{TCPServicesConfigMap: "ingress/tcp"})
	tr.Set(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "tcp"}, Data: map[string]string{"9000": "data/db:5432"}})
	tr.Set(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "db"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}}})
	tr.Set(streamSlice("db", "10.0.0.1"))
	d := tr.Flush()
	s, _ := d.Puts[bus.StreamServicesKey].(*bus.StreamServices)
	if s == nil || len(s.TCP) != 1 || len(s.TCP[0].Endpoints) != 1 || s.TCP[0].Endpoints[0].Address != "10.0.0.1" {
		t.Fatalf("first flush: %+v", s)
	}
	tr.Set(streamSlice("other", "10.0.0.9"))
	if d := tr.Flush(); d.Puts[bus.StreamServicesKey] != nil {
		t.Fatal("another Service's endpoints republished the stream services")
	}
	tr.Set(streamSlice("db", "10.0.0.2"))
	s, _ = tr.Flush().Puts[bus.StreamServicesKey].(*bus.StreamServices)
	if s == nil || s.TCP[0].Endpoints[0].Address != "10.0.0.2" {
		t.Fatalf("endpoint change: %+v", s)
	}
	tr.Set(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "tcp"}, Data: map[string]string{}})
	s, _ = tr.Flush().Puts[bus.StreamServicesKey].(*bus.StreamServices)
	if s == nil || len(s.TCP) != 0 {
		t.Fatalf("entry removed: %+v", s)
	}
}

func streamSlice(svc, addr string) *discoveryv1.EndpointSlice {
	name, port, ready := "pg", int32(15432), true
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "data", Name: svc + "-" + strconv.Itoa(1), Labels: map[string]string{serviceNameLabel: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
}
