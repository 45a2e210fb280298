package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// parseRunFlags parses args as switchyard run does.
func parseRunFlags(t *testing.T, args ...string) (*options, error) {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.register(fs)
	return &o, fs.Parse(args)
}

// TestEveryIngressNginxFlagIsKnown: each of ingress-nginx's flags is one
// of switchyard run's or has a fate in flags_ingressnginx.go, so a
// values file's extraArgs never stops the controller with "flag provided
// but not defined".
func TestEveryIngressNginxFlagIsKnown(t *testing.T) {
	data, err := os.ReadFile("testdata/ingress-nginx-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	var o options
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o.register(fs)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if fs.Lookup(line) == nil {
			t.Errorf("--%s is neither a flag of switchyard run nor one of ingressNginxFlags", line)
		}
	}
	if n < 80 {
		t.Fatalf("only %d flags in the list", n)
	}
}

// TestIngressNginxFlags: ignored flags are warnings, refused ones an
// error naming each, values Switchyard honours anyway neither, and the
// implemented ones reach the options.
func TestIngressNginxFlags(t *testing.T) {
	o, err := parseRunFlags(t, "--v=2", "--update-status-on-shutdown=false", "--profiling", "--sync-period", "10m",
		"--enable-annotation-validation", "--update-status=false", "--shutdown-grace-period=5", "--logtostderr")
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := o.ingressNginx.check()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"--v=2 is ignored", "--profiling=true is ignored", "--sync-period=10m is ignored"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning %q in:\n%s", want, joined)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("want 3 warnings (the values Switchyard honours anyway say nothing), got:\n%s", joined)
	}
	if o.ingressNginx.updateStatus() {
		t.Error("--update-status=false did not turn the status off")
	}
	if d, err := o.ingressNginx.shutdownDelay(); err != nil || d != 5*time.Second {
		t.Errorf("--shutdown-grace-period=5: %v, %v", d, err)
	}
	o, err = parseRunFlags(t, "--disable-catch-all", "--disable-svc-external-name=true", "--ingress-class-by-name")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.translatorConfig()
	if err != nil || !cfg.DisableCatchAll || !cfg.DisableServiceExternalName || !cfg.IngressClassByName {
		t.Errorf("the translator is not told: %+v, %v", cfg, err)
	}

	o, err = parseRunFlags(t, "--https-port=443", "--http-port=80", "--apiserver-host=", "--healthz-port=10254")
	if err != nil {
		t.Fatal(err)
	}
	warnings, err = o.ingressNginx.check()
	if err == nil || !strings.Contains(err.Error(), "--https-port=443") || !strings.Contains(err.Error(), "--http-port=80") ||
		strings.Contains(err.Error(), "apiserver-host") {
		t.Errorf("refused flags: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "--healthz-port") {
		t.Errorf("warnings beside the refusal: %v", warnings)
	}

	o, err = parseRunFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	if warnings, err := o.ingressNginx.check(); err != nil || len(warnings) != 0 || !o.ingressNginx.updateStatus() {
		t.Errorf("no flags: %v, %v, update-status %v", warnings, err, o.ingressNginx.updateStatus())
	}
	if _, err := parseRunFlags(t, "--update-status=maybe"); err == nil {
		t.Error("--update-status=maybe was accepted")
	}
	for _, bad := range []string{"-1", "5s", "3601"} {
		o, err := parseRunFlags(t, "--shutdown-grace-period="+bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.ingressNginx.shutdownDelay(); err == nil {
			t.Errorf("--shutdown-grace-period=%s was accepted", bad)
		}
	}
}

// TestFlagDocsAreCurrent keeps docs/flags.md equal to the flag table.
func TestFlagDocsAreCurrent(t *testing.T) {
	var got bytes.Buffer
	writeFlagDocs(&got)
	checkDoc(t, "docs/flags.md", "TestFlagDocsAreCurrent", got.Bytes())
}

// TestVersionFlag: ingress-nginx's --version prints the version and
// exits, starting nothing (no NGINX, no bus).
func TestVersionFlag(t *testing.T) {
	for _, cmd := range []func([]string) error{runCommand, func(args []string) error { return stageCommand(append([]string{"applier"}, args...)) }} {
		done := make(chan error, 1)
		go func() { done <- cmd([]string{"--version", "--state-dir", t.TempDir()}) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("--version: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("--version started the controller instead of printing the version")
		}
	}
}
