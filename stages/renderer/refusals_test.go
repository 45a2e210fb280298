package renderer

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

var sourceRevRe = regexp.MustCompile(`(?m)^\s*# source ingress (\S+) rev=([0-9a-f]{12})$`)

// revIn is the revision a file's comments give an Ingress.
func revIn(t *testing.T, file, ingress string) string {
	t.Helper()
	for _, m := range sourceRevRe.FindAllStringSubmatch(file, -1) {
		if m[1] == ingress {
			return m[2]
		}
	}
	t.Fatalf("no source comment for %s in\n%s", ingress, file)
	return ""
}

// TestRefusals renders a model with the applier's refusals: a refusal
// whose revision is current leaves the Ingress out or the key at its
// default; a stale one changes nothing.
func TestRefusals(t *testing.T) {
	cfg := DefaultConfig()
	m := harness.ReadModel(t, "testdata/basic.model.json")
	custom := bus.DefaultSettings()
	custom.LogFormatUpstream = `$remote_addr custom "$request"`
	m.Settings = &custom
	base, errs := Render(cfg, m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	shopFile := ServerFile("shop.example.com")
	shopRev := revIn(t, base.Files[shopFile], "shop/shop")
	keyRev := settingRev(&custom, "log-format-upstream")
	ingress := func(name, rev string) map[string]*bus.Refusal {
		ref := &bus.Refusal{Kind: bus.RefusedIngress, Name: name, Rev: rev, Message: "refused"}
		return map[string]*bus.Refusal{ref.Key(): ref}
	}
	key := func(name, rev string) map[string]*bus.Refusal {
		ref := &bus.Refusal{Kind: bus.RefusedConfigMap, Name: name, Rev: rev, Message: "refused"}
		return map[string]*bus.Refusal{ref.Key(): ref}
	}
	tests := []struct {
		name     string
		refusals map[string]*bus.Refusal
		check    func(t *testing.T, art Artifacts)
	}{
		{"current Ingress revision: left out everywhere", ingress("shop/shop", shopRev), func(t *testing.T, art Artifacts) {
			if _, ok := art.Files[shopFile]; ok {
				t.Error("the server of the refused Ingress alone is still rendered")
			}
			if strings.Contains(art.Files[ServerFile("_")], "shop/shop") || strings.Contains(art.Files[ServerFile("_")], `"/shop/"`) {
				t.Error("the refused Ingress's location on the catch-all server is still rendered")
			}
			if !strings.Contains(art.Files[ServerFile("legacy.example.com")], "# source ingress shop/legacy") {
				t.Error("another Ingress went too")
			}
			if !strings.Contains(art.Files[MainFile], "\n# refused ingress shop/shop rev="+shopRev+"\n") {
				t.Error("nginx.conf does not list the refusal it honours")
			}
		}},
		{"stale Ingress revision: tried again", ingress("shop/shop", "000000000000"), func(t *testing.T, art Artifacts) {
			if !equalFiles(art.Files, base.Files) {
				t.Error("a stale refusal changed the configuration")
			}
		}},
		{"refusal of an Ingress that is gone", ingress("shop/gone", shopRev), func(t *testing.T, art Artifacts) {
			if !equalFiles(art.Files, base.Files) {
				t.Error("the refusal of a missing Ingress changed the configuration")
			}
		}},
		{"current key revision: its default", key("log-format-upstream", keyRev), func(t *testing.T, art Artifacts) {
			main := art.Files[MainFile]
			if strings.Contains(main, "custom") || !strings.Contains(main, "log_format upstreaminfo '"+bus.DefaultLogFormatUpstream+"'") {
				t.Errorf("log format not back to its default:\n%s", main)
			}
			if strings.Contains(main, "# source configmap log-format-upstream") ||
				!strings.Contains(main, "# refused configmap log-format-upstream rev="+keyRev) {
				t.Error("the default is attributed to the refused key, or the refusal is not listed")
			}
			if !equalFiles(withoutMain(art.Files), withoutMain(base.Files)) {
				t.Error("a refused key changed the server files")
			}
		}},
		{"stale key revision: tried again", key("log-format-upstream", "000000000000"), func(t *testing.T, art Artifacts) {
			if !equalFiles(art.Files, base.Files) {
				t.Error("a stale refusal changed the configuration")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			art, errs := RenderRefused(cfg, m, tt.refusals)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tt.check(t, art)
			nginxTestArchive(t, archive(t, art))
		})
	}
}

// TestRefusalsIncremental gives a running renderer a refusal and takes it
// back: the refused Ingress's files go and come back, nothing else moves.
func TestRefusalsIncremental(t *testing.T) {
	m := harness.ReadModel(t, "testdata/basic.model.json")
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRenderer(DefaultConfig())
	first, errs := r.Update(entries, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	legacyFile := ServerFile("legacy.example.com")
	rev := revIn(t, first.Values[fileKey(legacyFile)].(bus.RenderedFile).Content, "shop/legacy")
	ref := &bus.Refusal{Kind: bus.RefusedIngress, Name: "shop/legacy", Rev: rev}
	r.SetRefusal(ref.Key(), ref)
	out, errs := r.Flush()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !slices.Contains(out.Deletes, fileKey(legacyFile)) || len(out.Values) != 1 || out.Values[fileKey(MainFile)] == nil {
		t.Fatalf("refusal: puts %v, deletes %v; want nginx.conf put and the legacy server deleted", keysOf(out.Values), out.Deletes)
	}
	r.SetRefusal(ref.Key(), nil)
	out, _ = r.Flush()
	if out.Values[fileKey(legacyFile)] == nil || len(out.Deletes) != 0 {
		t.Fatalf("refusal gone: puts %v, deletes %v; want the legacy server back", keysOf(out.Values), out.Deletes)
	}

	// What reaches Lua only changes no file: no revision, no reload.
	key := bus.Key(bus.KindServer, "legacy.example.com")
	legacy := *m.Servers[key]
	legacy.Locations = slices.Clone(legacy.Locations)
	f := bus.Features{}
	if old := legacy.Locations[0].Features; old != nil {
		f = *old
	}
	f.Balancing = &bus.Balancing{LoadBalance: "ewma"}
	legacy.Locations[0].Features = &f
	legacy.Locations[0].Canary = &bus.LocationCanary{Ingress: "shop/canary", Backend: "shop-canary-80"}
	r.SetServer(key, &legacy)
	out, _ = r.Flush()
	if content := out.Values[fileKey(legacyFile)].(bus.RenderedFile).Content; revIn(t, content, "shop/legacy") != rev {
		t.Fatalf("a Lua-only change gave the Ingress a new revision:\n%s", content)
	}
}

func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func withoutMain(files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if k != MainFile {
			out[k] = v
		}
	}
	return out
}
