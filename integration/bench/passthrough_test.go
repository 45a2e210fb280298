package bench

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/templates"
)

// passFront is one way of routing TLS by SNI name in NGINX's stream
// block, on its own port of one hand-written NGINX (passthroughFronts).
type passFront struct {
	name string
	port int
}

// TestBenchPassthroughRouting reports, from one run, TLS connections per
// second (a full handshake each) through three stream fronts of one NGINX,
// in alternating rounds, to a passthrough host (its TLS goes to a Go TLS
// server) and to a terminated host (NGINX's http module terminates it):
//   - static: the route and the endpoints in NGINX maps and upstreams,
//     Switchyard before njs (an endpoint change reloads);
//   - njs endpoints: the route in a map, the endpoints read by
//     templates/passthrough.js (what Switchyard renders now);
//   - njs route: the route decided in njs too, by a file per passthrough
//     host (a new passthrough host would not reload either), which every
//     terminated connection then pays;
//   - static again: a second static front, the control: how far two
//     identical fronts differ in this run.
func TestBenchPassthroughRouting(t *testing.T) {
	requireBench(t)
	passCert, passKey := harness.SelfSigned(t, "pass.example.com")
	backend := startHandshakeServer(t, passCert, passKey)
	fronts := startPassthroughFronts(t, backend)

	const rounds, per, conns = 20, 500 * time.Millisecond, 4
	hosts := []string{"pass.example.com", "term.example.com"}
	// rates[host][front] holds one rate per round.
	rates := map[string]map[string][]float64{}
	for _, host := range hosts {
		rates[host] = map[string][]float64{}
		for _, f := range fronts {
			harness.WaitFor(t, 30*time.Second, f.name+" handshakes for "+host, func() error {
				return handshake(f.port, host)
			})
		}
	}
	for i := 0; i < rounds; i++ {
		for _, host := range hosts {
			for j := range fronts {
				// Rotate the order each round: no front always goes first.
				f := fronts[(i+j)%len(fronts)]
				rates[host][f.name] = append(rates[host][f.name], float64(handshakes(f.port, host, conns, per))/per.Seconds())
			}
		}
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nTLS passthrough routing: new TLS connections per second, %d connections at a time, %d alternating rounds of %s;\n"+
		"the ratio is the median over the rounds of each round's rate against static's in the same round\n",
		strings.Repeat("=", 100), conns, rounds, per)
	for _, host := range hosts {
		for _, f := range fronts {
			fmt.Fprintf(&rep, "%-18s %-14s %8.0f /s  (%.3f of static)\n", host, f.name, mean(rates[host][f.name]),
				medianRatio(rates[host][f.name], rates[host]["static"]))
		}
	}
	term := rates["term.example.com"]
	fmt.Fprintf(&rep, "terminated hosts with the route in njs (a reload-free new passthrough host): %.3f of static, the control %.3f (~0.97 is the bar)\n",
		medianRatio(term["njs route"], term["static"]), medianRatio(term["static again"], term["static"]))
	t.Log(rep.String())
}

// startPassthroughFronts runs one NGINX with the four fronts
// TestBenchPassthroughRouting compares, each passing pass.example.com to
// backend and terminating every other name.
func startPassthroughFronts(t *testing.T, backend int) []passFront {
	termCert, termKey := harness.SelfSigned(t, "term.example.com")
	fronts := []passFront{{name: "static"}, {name: "njs endpoints"}, {name: "njs route"}, {name: "static again"}}
	for i := range fronts {
		fronts[i].port = harness.FreePort(t)
	}
	conf := fmt.Sprintf(`load_module %[1]s/ngx_stream_module.so;
load_module %[1]s/ngx_stream_js_module.so;
worker_processes %[5]d;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen unix:{{dir}}/tls.sock ssl proxy_protocol;
        ssl_certificate {{dir}}/term.crt;
        ssl_certificate_key {{dir}}/term.key;
        return 200;
    }
}
stream {
    js_import switchyard_passthrough from {{dir}}/passthrough.js;
    js_import route from {{dir}}/route.js;
    js_var $switchyard_passthrough_dir "{{dir}}/pass";
    js_set $switchyard_passthrough_backend switchyard_passthrough.backend;
    js_set $njs_route route.route;
    map $ssl_preread_server_name $static_route {
        pass.example.com "pass_static";
        default "terminate";
    }
    map $ssl_preread_server_name $map_route {
        pass.example.com "pass_njs";
        default "terminate";
    }
    map $ssl_preread_server_name $static_backend {
        pass.example.com "backend_static";
        default "switchyard_passthrough_none";
    }
    upstream terminate { server unix:{{dir}}/tls.sock; }
    upstream pass_static { server unix:{{dir}}/pass_static.sock; }
    upstream pass_njs { server unix:{{dir}}/pass_njs.sock; }
    upstream backend_static { server 127.0.0.1:%[6]d; }
    upstream switchyard_passthrough_none { server 127.0.0.1:1 down; }
    server { listen 127.0.0.1:%[2]d reuseport; ssl_preread on; proxy_protocol on; proxy_pass $static_route; }
    server { listen 127.0.0.1:%[3]d reuseport; ssl_preread on; proxy_protocol on; proxy_pass $map_route; }
    server { listen 127.0.0.1:%[4]d reuseport; ssl_preread on; proxy_protocol on; proxy_pass $njs_route; }
    server { listen 127.0.0.1:%[7]d reuseport; ssl_preread on; proxy_protocol on; proxy_pass $static_route; }
    server { listen unix:{{dir}}/pass_static.sock proxy_protocol; ssl_preread on; proxy_pass $static_backend; }
    server { listen unix:{{dir}}/pass_njs.sock proxy_protocol; ssl_preread on; proxy_pass $switchyard_passthrough_backend; }
}
`, harness.ModulesDir, fronts[0].port, fronts[1].port, fronts[2].port, harness.Workers, backend, fronts[3].port)
	harness.RunNginx(t, conf, map[string]string{
		"term.crt": string(termCert), "term.key": string(termKey),
		"passthrough.js": templates.PassthroughJS, "route.js": routeJS,
		"pass/pass.example.com": fmt.Sprintf("127.0.0.1:%d\n", backend),
	})
	for _, f := range fronts {
		harness.WaitFor(t, 30*time.Second, f.name+" listening", func() error {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", f.port))
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	return fronts
}

// routeJS is the route decision in njs that TestBenchPassthroughRouting
// measures: a passthrough host is one with a file, so every terminated
// connection pays a VM and a failed lookup.
const routeJS = `import fs from 'fs';
var HOST = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
function route(s) {
    var name = (s.variables.ssl_preread_server_name || '').toLowerCase();
    if (name.length > 253 || !HOST.test(name)) {
        return 'terminate';
    }
    try {
        fs.accessSync(s.variables.switchyard_passthrough_dir + '/' + name);
        return 'pass_njs';
    } catch (e) {
        return 'terminate';
    }
}
export default {route};
`

// startHandshakeServer accepts TLS connections and closes each one after
// its handshake.
func startHandshakeServer(t *testing.T, certPEM, keyPEM []byte) int {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	return harness.ServeConns(t, l, func(c net.Conn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_ = c.(*tls.Conn).Handshake()
	})
}

// handshakes opens TLS connections with SNI host to port from conns
// clients for d, one handshake each, and returns how many completed.
func handshakes(port int, host string, conns int, d time.Duration) int64 {
	var done atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if handshake(port, host) == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return done.Load()
}

// handshake opens one TLS connection with SNI host to port and closes it.
func handshake(port int, host string) error {
	cfg := &tls.Config{ServerName: host, InsecureSkipVerify: true} // a rate, not a check
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port), cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// TestBenchPassthroughEndpoints reports, from one Switchyard run with
// --enable-ssl-passthrough: the time from an EndpointSlice change of a
// passthrough host's backend to the first new TLS connection on the new
// endpoint (the applier rewrites the host's endpoints file; before njs a
// reload, about 1.1 s), and whether NGINX reloaded meanwhile.
func TestBenchPassthroughEndpoints(t *testing.T) {
	requireBench(t)
	certA, keyA := harness.SelfSigned(t, "pass-a.example.com")
	certB, keyB := harness.SelfSigned(t, "pass-b.example.com")
	ports := map[string]int{"pass-a.example.com": startHandshakeServer(t, certA, keyA), "pass-b.example.com": startHandshakeServer(t, certB, keyB)}
	dir := t.TempDir()
	setEndpoint := func(cn string) {
		harness.WriteFile(t, filepath.Join(dir, "service.yaml"), harness.ServiceYAML("default", "pass", ports[cn]))
	}
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	setEndpoint("pass-a.example.com")
	harness.WriteFile(t, filepath.Join(dir, "ingress.yaml"), harness.AnnotatedIngressYAML("default", "pass", "pass.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/ssl-passthrough": "true"}, harness.Path{Path: "/", Type: "Prefix", Service: "pass"}))
	sy := harness.StartSwitchyard(t, dir, "--enable-ssl-passthrough", "--log-level", "warn")
	waitCN(t, sy.HTTPSAddr, "pass-a.example.com", time.Minute)
	workers := sy.WorkerPIDs(t)

	change := series{name: "endpoint change → new TLS connection on it"}
	for i := 0; i < 30; i++ {
		cn := "pass-b.example.com"
		if i%2 == 1 {
			cn = "pass-a.example.com"
		}
		start := time.Now()
		setEndpoint(cn)
		waitCN(t, sy.HTTPSAddr, cn, time.Minute)
		change.samples = append(change.samples, time.Since(start))
	}
	reloaded := !slices.Equal(sortedInts(workers), sortedInts(sy.WorkerPIDs(t)))
	t.Logf("\n%s\nTLS passthrough endpoints (njs, no reload)\n%s\nNGINX reloaded during the 30 endpoint changes: %v\n",
		strings.Repeat("=", 100), change, reloaded)
	if reloaded {
		t.Error("a passthrough endpoint change reloaded NGINX")
	}
}

// waitCN polls with new TLS connections every millisecond until addr
// serves the certificate named cn for pass.example.com.
func waitCN(t *testing.T, addr, cn string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, got, err := harness.ServedCertificate(addr, "pass.example.com"); err == nil && got == cn {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s did not serve %s within %s", addr, cn, timeout)
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// medianRatio is the median of a[i]/b[i].
func medianRatio(a, b []float64) float64 {
	ratios := make([]float64, len(a))
	for i := range a {
		ratios[i] = a[i] / b[i]
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}
