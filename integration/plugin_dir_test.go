package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

const responseHeaderKey = "plugins.example.com/response-header"

// TestThirdPartyPluginFromPluginDir builds the example plugin against the
// SDK alone, loads it from --plugin-dir, and checks what a user sees: the
// header on responses, a value its pattern refuses rejecting only that
// Ingress, and its documentation in `switchyard annotations`.
func TestThirdPartyPluginFromPluginDir(t *testing.T) {
	bin := harness.Binary(t)
	pluginDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "responseheader"), "./plugins/examples/responseheader")
	build.Dir = filepath.Join("..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example plugin: %v\n%s", err, out)
	}
	// A file that is not executable is not a plugin, and must not stop the others.
	harness.WriteFile(t, filepath.Join(pluginDir, "README"), "not a plugin\n")

	port := harness.StartEcho(t, bin, "echo", "pod-a")
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "service.yaml"), harness.ServiceYAML("default", "echo", port))
	harness.WriteFile(t, filepath.Join(dir, "plain.yaml"), harness.IngressYAML("default", "plain", "plain.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	harness.WriteFile(t, filepath.Join(dir, "headed.yaml"), harness.AnnotatedIngressYAML("default", "headed", "headed.example.com",
		map[string]string{responseHeaderKey: "X-Team: payments"}, harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	sy := harness.StartSwitchyard(t, dir, "--plugin-dir", pluginDir)

	harness.WaitFor(t, 10*time.Second, "the plugin's header", func() error {
		r, err := sy.Get("headed.example.com", "/")
		if err != nil {
			return err
		}
		if r.Status != 200 || r.Header.Get("X-Team") != "payments" {
			return fmt.Errorf("status %d, X-Team %q", r.Status, r.Header.Get("X-Team"))
		}
		return nil
	})
	if r, err := sy.Get("plain.example.com", "/"); err != nil || r.Status != 200 || r.Header.Get("X-Team") != "" {
		t.Fatalf("the Ingress without the annotation: %+v %v", r, err)
	}

	// A value outside the plugin's pattern (a quote) rejects that Ingress.
	harness.WriteFile(t, filepath.Join(dir, "headed.yaml"), harness.AnnotatedIngressYAML("default", "headed", "headed.example.com",
		map[string]string{responseHeaderKey: `X-Team: "payments"`}, harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	harness.WaitFor(t, 10*time.Second, "the rejected Ingress to stop being served", func() error {
		r, err := sy.Get("headed.example.com", "/")
		if err != nil {
			return err
		}
		if r.Status != 404 {
			return fmt.Errorf("status %d", r.Status)
		}
		return nil
	})
	if !strings.Contains(sy.Output.String(), responseHeaderKey) {
		t.Fatalf("the rejection is not reported with the annotation's name:\n%s", sy.Output.String())
	}
	if r, err := sy.Get("plain.example.com", "/"); err != nil || r.Status != 200 {
		t.Fatalf("the other Ingress stopped being served: %+v %v", r, err)
	}

	docs, err := exec.Command(bin, "annotations", "--plugin-dir", pluginDir).Output()
	if err != nil {
		t.Fatalf("switchyard annotations: %v", err)
	}
	for _, want := range []string{"## responseheader", "`" + responseHeaderKey + "`", "## canary", "## auth"} {
		if !strings.Contains(string(docs), want) {
			t.Fatalf("switchyard annotations --plugin-dir does not list %q:\n%s", want, docs)
		}
	}
}
