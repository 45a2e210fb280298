package renderer

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden renders every testdata/*.model.json and compares the result
// with testdata/*.golden.txtar; every golden configuration must also pass
// nginx -t with the real NGINX and Lua module.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.model.json")
	if len(inputs) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".model.json")
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			if name == "settings" {
				cfg.Resolvers = []string{"127.0.0.53", "[::1]:5353"}
			}
			if strings.HasPrefix(name, "passthrough") {
				cfg = passthroughConfig()
			}
			if strings.HasPrefix(name, "stream-services") {
				cfg.StreamServices = true
			}
			if strings.HasPrefix(name, "lua-routing") {
				cfg.LuaRouting = true
			}
			art, errs := Render(cfg, harness.ReadModel(t, in))
			if len(errs) > 0 {
				t.Fatalf("render: %v", errs)
			}
			got := txtar.Format(archive(t, art))
			want := harness.Golden(t, filepath.Join("testdata", name+".golden.txtar"), got, *update)
			nginxTestArchive(t, txtar.Parse(want))
		})
	}
}

// archive lays the artifacts out as files: the configuration files as they
// are written, and the Lua payloads as JSON.
func archive(t *testing.T, art Artifacts) *txtar.Archive {
	t.Helper()
	a := &txtar.Archive{Comment: []byte("Rendered by TestGolden; regenerate with go test -update.\n")}
	names := make([]string, 0, len(art.Files))
	for n := range art.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a.Files = append(a.Files, txtar.File{Name: n, Data: []byte(art.Files[n])})
	}
	for _, payload := range []struct {
		name  string
		value any
	}{{"lua/backends.json", art.Backends}, {"lua/certificates.json", art.Certificates}, {"lua/routes.json", art.Routes},
		{"passthrough/endpoints.json", art.Passthrough}} {
		if (payload.name == "lua/routes.json" && len(art.Routes) == 0) || (payload.name == "passthrough/endpoints.json" && len(art.Passthrough) == 0) {
			continue
		}
		data, err := json.MarshalIndent(payload.value, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		a.Files = append(a.Files, txtar.File{Name: payload.name, Data: append(data, '\n')})
	}
	return a
}

func nginxTestArchive(t *testing.T, a *txtar.Archive) {
	t.Helper()
	nginx := harness.Nginx(t)
	files := map[string]string{}
	for _, f := range a.Files {
		if !strings.HasPrefix(f.Name, "lua/") && !strings.HasPrefix(f.Name, "passthrough/") {
			files[f.Name] = string(f.Data)
		}
	}
	harness.NginxTest(t, nginx, harness.Prefix(t, files))
}

// TestUpdateAppliesChanges feeds the renderer a whole model table, then a
// deleted server and a changed one, and compares the table its outputs
// build with a render of the same model from scratch.
func TestUpdateAppliesChanges(t *testing.T) {
	cfg := DefaultConfig()
	m := harness.ReadModel(t, "testdata/basic.model.json")
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRenderer(cfg)
	table := map[string][]byte{}
	out, errs := r.Update(entries, nil)
	if len(errs) > 0 {
		t.Fatalf("whole table: %v", errs)
	}
	applyOutput(t, table, out)
	keys := slices.Sorted(maps.Keys(m.Servers))
	if len(keys) < 2 {
		t.Fatalf("basic model has %d servers, want at least 2", len(keys))
	}
	gone, changed := keys[0], keys[1]
	goneFile := fileKey(ServerFile(m.Servers[gone].Hostname))
	delete(m.Servers, gone)
	m.Servers[changed].Locations = m.Servers[changed].Locations[:1]
	data, err := json.Marshal(m.Servers[changed])
	if err != nil {
		t.Fatal(err)
	}
	out, errs = r.Update(map[string][]byte{changed: data}, []string{gone})
	if len(errs) > 0 {
		t.Fatalf("change: %v", errs)
	}
	if !slices.Contains(out.Deletes, goneFile) || len(out.Values) != 1 {
		t.Fatalf("change output: puts %v, deletes %v", slices.Sorted(maps.Keys(out.Values)), out.Deletes)
	}
	applyOutput(t, table, out)
	art, errs := Render(cfg, m)
	if len(errs) > 0 {
		t.Fatalf("render: %v", errs)
	}
	want := map[string][]byte{}
	applyOutput(t, want, bus.Output{Values: artifactValues(art)})
	if !maps.EqualFunc(table, want, bytes.Equal) {
		t.Fatalf("after the change the table holds %v, want %v", slices.Sorted(maps.Keys(table)), slices.Sorted(maps.Keys(want)))
	}
}

// applyOutput brings a table up to date with one renderer output, as the
// bus writer would.
func applyOutput(t *testing.T, table map[string][]byte, out bus.Output) {
	t.Helper()
	for key, v := range out.Values {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		table[key] = data
	}
	for key, data := range out.Puts {
		table[key] = data
	}
	for _, key := range out.Deletes {
		delete(table, key)
	}
}

// putSettings hands the renderer new controller settings, as a change of
// the annotations stage's table does, and returns its output.
func putSettings(t *testing.T, r *Renderer, s bus.Settings) bus.Output {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out, errs := r.Update(map[string][]byte{bus.SettingsKey: data}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return out
}

// artifactValues lists artifacts as the renderer's table, by key.
func artifactValues(a Artifacts) map[string]any {
	values := map[string]any{}
	for path, content := range a.Files {
		values[fileKey(path)] = bus.RenderedFile{Path: path, Content: content}
	}
	for name, b := range a.Backends {
		values[bus.Key(bus.KindBackend, name)] = b
	}
	for id, c := range a.Certificates {
		ns, name, _ := strings.Cut(id, "/")
		values[bus.Key(bus.KindCertificate, ns, name)] = c
	}
	return values
}

// passthroughConfig is DefaultConfig with --enable-ssl-passthrough.
func passthroughConfig() Config {
	cfg := DefaultConfig()
	cfg.SSLPassthrough = true
	return cfg
}
