package applier_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/stages/applier"
	"switchyard.dev/switchyard/stages/renderer"
)

var sourceLine = regexp.MustCompile(`^\s*# source (ingress|configmap) (\S+) rev=([0-9a-f]{12})$`)

// TestEveryRenderedPathIsTraced injects a directive NGINX refuses at the
// end of every attributed part of the renderer's golden configurations
// (locations, server headers, from-to-www-redirect servers, rate limit
// zones, external auth locations, custom error pages, each ConfigMap key
// in nginx.conf), runs the real nginx -t, and checks that the applier
// traces the refusal to the source the part names.
func TestEveryRenderedPathIsTraced(t *testing.T) {
	bin := harness.Nginx(t)
	seen := map[string]int{} // kinds of parts traced
	for _, model := range []string{"auth", "ratelimit", "redirect", "settings", "default-backend"} {
		t.Run(model, func(t *testing.T) {
			m := harness.ReadModel(t, filepath.Join("..", "renderer", "testdata", model+".model.json"))
			cfg := renderer.DefaultConfig()
			cfg.Resolvers = []string{"127.0.0.53"}
			art, errs := renderer.Render(cfg, m)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			prefix := harness.Prefix(t, art.Files)
			// As the applier has them: with its addresses and sockets.
			for n, c := range art.Files {
				art.Files[n] = harness.Local(prefix).Localize(c)
			}
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for n := range art.Files {
					if !yield(n) {
						return
					}
				}
			}) {
				lines := strings.Split(art.Files[name], "\n")
				for i, l := range lines {
					want := sourceLine.FindStringSubmatch(l)
					if want == nil {
						continue
					}
					seen[partKind(want[1], lines[i+1])]++
					at := spanEnd(lines, i)
					injected := slices.Concat(lines[:at], []string{renderer.TestRefusedDirective}, lines[at:])
					files := map[string]string{}
					for n, c := range art.Files {
						files[n] = c
					}
					files[name] = strings.Join(injected, "\n")
					out := nginxT(t, bin, prefix, name, files[name])
					got, ok := applier.Attribute(out, prefix, nginx.ConfDir, files)
					if !ok || got.Kind != want[1] || got.Name != want[2] || got.Rev != want[3] || got.File != name || got.Line != at+1 {
						t.Errorf("%s line %d (%s): traced to %+v (%v); nginx said %s", name, at+1, l, got, ok, out)
					}
				}
				// Leave the prefix as rendered for the next file.
				writeConf(t, prefix, name, art.Files[name])
			}
		})
	}
	t.Logf("parts traced: %v", seen)
	for _, kind := range []string{"configmap", "server", "location", "www-redirect", "zone", "external-auth", "custom-errors"} {
		if seen[kind] == 0 {
			t.Errorf("no %s part was tried", kind)
		}
	}
}

// partKind names what an attributed part renders, from its first line.
func partKind(kind, first string) string {
	first = strings.TrimSpace(first)
	switch {
	case kind == "configmap" && strings.HasPrefix(first, "# custom-http-errors"):
		return "custom-errors"
	case kind == "configmap":
		return "configmap"
	case first == "server {":
		return "server"
	case strings.HasPrefix(first, "# from-to-www-redirect"):
		return "www-redirect"
	case strings.HasPrefix(first, "limit_"), strings.HasPrefix(first, "# limit-allowlist"):
		return "zone"
	case first == "":
		return "external-auth" // a blank line, then the internal location
	case strings.HasPrefix(first, "location"):
		return "location"
	}
	return first
}

// spanEnd is where an attributed part that starts at line i ends: before
// the next "# source" comment, or at the end of the file.
func spanEnd(lines []string, i int) int {
	for j := i + 1; j < len(lines); j++ {
		if strings.HasPrefix(strings.TrimSpace(lines[j]), "# source ") {
			return j
		}
	}
	return len(lines)
}

func writeConf(t *testing.T, prefix, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(prefix, nginx.ConfDir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nginxT writes one file and returns what nginx -t says; it must refuse.
func nginxT(t *testing.T, bin, prefix, name, content string) string {
	t.Helper()
	writeConf(t, prefix, name, content)
	out, err := nginx.TestConfig(context.Background(), bin, prefix, nginx.ConfDir)
	if err == nil {
		t.Fatalf("nginx -t accepted %s with the injected directive", name)
	}
	return out
}
