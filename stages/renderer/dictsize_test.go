package renderer

import (
	"fmt"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestDictSize(t *testing.T) {
	for _, tt := range []struct {
		payload int
		minimum string
		want    string
	}{
		{0, "64m", "64m"},
		{10 << 20, "64m", "64m"},  // 4 copies + 1 MiB = 41 MiB
		{16 << 20, "64m", "128m"}, // 65 MiB
		{40 << 20, "64m", "256m"},
		{100 << 10, "512k", "2m"}, // 1.4 MiB
		{100 << 10, "2048k", "2048k"},
	} {
		got, err := dictSize(tt.payload, tt.minimum)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("dictSize(%d, %s) = %s, want %s", tt.payload, tt.minimum, got, tt.want)
		}
	}
	for _, bad := range []string{"", "m", "-1m", "64x", "0"} {
		if _, err := dictSize(1, bad); err == nil {
			t.Errorf("minimum %q accepted", bad)
		}
	}
}

// TestDictsFollowThePayload: many large backends grow the config dict in
// nginx.conf; removing them does not shrink it (a resize loses the dict's
// content, so it must stay rare).
func TestDictsFollowThePayload(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ConfigDictSize = "1m"
	r := newFileRenderer(cfg)
	r.SetSettings(ptrTo(bus.DefaultSettings()))
	if _, errs := r.Flush(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !strings.Contains(r.Artifacts().Files[MainFile], "lua_shared_dict switchyard_config 1m;") {
		t.Fatal("empty model: the config dict is not at its minimum")
	}
	endpoints := make([]bus.Endpoint, 200)
	for i := range endpoints {
		endpoints[i] = bus.Endpoint{Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250), Port: "8080"}
	}
	for i := range 100 {
		r.SetBackend(fmt.Sprintf("ns-svc%d-80", i), &bus.Backend{Name: fmt.Sprintf("ns-svc%d-80", i), Endpoints: endpoints})
	}
	out, errs := r.Flush()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, ok := out.Values[fileKey(MainFile)]; !ok {
		t.Fatal("nginx.conf not re-rendered when the backends outgrew the dict")
	}
	main := r.Artifacts().Files[MainFile]
	want, _ := dictSize(r.sizes.backendTotal, "1m")
	if r.sizes.backendTotal < 500_000 || want == "1m" || !strings.Contains(main, "lua_shared_dict switchyard_config "+want+";") {
		t.Fatalf("%d bytes of backends: want a %s dict, got:\n%s", r.sizes.backendTotal, want, grepLine(main, "switchyard_config"))
	}
	for i := range 100 {
		r.SetBackend(fmt.Sprintf("ns-svc%d-80", i), nil)
	}
	out, _ = r.Flush()
	if _, ok := out.Values[fileKey(MainFile)]; ok || !strings.Contains(r.Artifacts().Files[MainFile], "switchyard_config "+want+";") {
		t.Fatal("the dict shrank when the backends went")
	}
}

func ptrTo[T any](v T) *T { return &v }

func grepLine(text, needle string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, needle) {
			return line
		}
	}
	return ""
}
