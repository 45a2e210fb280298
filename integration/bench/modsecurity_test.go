package bench

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/templates"
)

// TestBenchModSecurity reports what ModSecurity with the OWASP Core Rule
// Set costs, in one run on one Switchyard: the throughput of a host with
// enable-modsecurity and enable-owasp-core-rules (SecRuleEngine On, so
// every rule runs as it would blocking) against the fixture's bare host,
// alternating. There is no target: the issue asks for the ratio.
func TestBenchModSecurity(t *testing.T) {
	requireBench(t)
	f := newFixture(t)
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", f.portA, f.portB))
	const waf = "waf.bench.example.com"
	harness.WriteFile(t, filepath.Join(f.dir, "waf.yaml"), harness.AnnotatedIngressYAML("default", "waf", waf, map[string]string{
		"nginx.ingress.kubernetes.io/enable-modsecurity":      "true",
		"nginx.ingress.kubernetes.io/enable-owasp-core-rules": "true",
	}, harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	config := filepath.Join(t.TempDir(), "modsecurity-on.conf")
	harness.WriteFile(t, config, strings.Replace(templates.ModSecurityDefault, "SecRuleEngine DetectionOnly", "SecRuleEngine On", 1))
	sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--modsecurity-config", config)
	waitServed(t, sy, f.host, "", 60*time.Second)
	waitServed(t, sy, waf, "", 60*time.Second)
	// The firewall is really on the measured host.
	if r, err := sy.Get(waf, "/?id=1%27%20OR%20%271%27%3D%271"); err != nil || r.Status != http.StatusForbidden {
		t.Fatalf("a SQL injection probe through ModSecurity: %d %v, want 403", r.Status, err)
	}
	master := sy.MasterPID(t)
	targets := []benchTarget{
		{name: "no ModSecurity", addr: sy.HTTPAddr, master: master, host: f.host},
		{name: "ModSecurity + OWASP CRS", addr: sy.HTTPAddr, master: master, host: waf},
	}
	const rounds = 3
	per := 4 * time.Second
	runs := alternate(targets, f.host, rounds, per)
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nModSecurity cost: %d keep-alive clients, %d alternating rounds of %s each\n",
		strings.Repeat("=", 100), overheadClients, rounds, per)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-32s %s\n", targets[i].name, r)
	}
	fmt.Fprintf(&rep, "throughput ratio ModSecurity+CRS / without: %.2f (no target); NGINX CPU per request without / with: %.2f\n",
		runs[1].rps()/runs[0].rps(), ratio(runs[0].cpuPerRequest(), runs[1].cpuPerRequest()))
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
}
