package renderer

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

var renderSeeds = []struct{ host, path, backend string }{
	{"shop.example.com", "/", "default-web-80"},
	{"*.wild.example.com", "/api/", "default-api-http"},
	{"x.com", "/a\";return 200;#", "b"},
	{"x.com", "/a", "b\"; proxy_pass http://evil;#"},
	{"x.com\nlisten 1", "/", "b"},
	{"x.com", "/${host}", "b"},
	{"x.com", "/(a|b)+[0-9]*", "b"},
	{"x.com", "/a b", "b"},
	{"x.com", "/a\\", "b"},
	{"x.com", "/something(/|$)(.*)", "b"},
	{"x.com", "/v[0-9]{1,2}$", "b"},
}

// regexConstructs are the uses of "$" and braces a location may make.
var regexConstructs = regexp.MustCompile(`\$[)|/]|\$$|\{[0-9]{1,3}(,[0-9]{0,3})?\}`)

// FuzzRenderRegexServer: in a regex server (use-regex, rewrite-target)
// an accepted path names no NGINX variable and an accepted rewrite target
// uses "$" only for captures $1-$9; nothing ends a quoted string.
func FuzzRenderRegexServer(f *testing.F) {
	f.Add("/something(/|$)(.*)", "/$2")
	f.Add("/a$host", "/$host")
	f.Add("/a{${x}}", "/${1}")
	f.Add("/(", "/$0")
	f.Add("/a", `/";return 200 "`)
	captureOnly := regexp.MustCompile(`\$([^1-9]|$)`)
	f.Fuzz(func(t *testing.T, path, target string) {
		s := serverFor("x.example.com", path, "b", "ImplementationSpecific")
		s.Locations[0].Features = &bus.Features{Rewrite: &bus.Rewrite{Target: target, UseRegex: true}}
		text, err := renderServer(DefaultConfig(), bus.DefaultSettings(), s, backendContext{}, sources{})
		if err != nil {
			return
		}
		if strings.ContainsAny(regexConstructs.ReplaceAllString(path, ""), "\"\\$\r\n\x00;{}# \t'") {
			t.Fatalf("accepted path %q into:\n%s", path, text)
		}
		if captureOnly.MatchString(target) || strings.ContainsAny(target, "\"\\\r\n\x00;{}# \t'") {
			t.Fatalf("accepted target %q into:\n%s", target, text)
		}
	})
}

func serverFor(host, path, backend, pathType string) *bus.Server {
	return &bus.Server{Hostname: host, Locations: []bus.Location{{Path: path, PathType: pathType, Backend: backend}}}
}

// FuzzRenderServer: whatever the renderer accepts never carries a quote,
// '$', '\', CR, LF or NUL into nginx.conf, and it never panics.
func FuzzRenderServer(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add(s.host, s.path, s.backend, false)
	}
	f.Fuzz(func(t *testing.T, host, path, backend string, exact bool) {
		pathType := bus.PathPrefix
		if exact {
			pathType = bus.PathExact
		}
		text, err := renderServer(DefaultConfig(), bus.DefaultSettings(), serverFor(host, path, backend, pathType), backendContext{}, sources{})
		if err != nil {
			return
		}
		// A path may hold "$" as a regex anchor and {n,m} repetition:
		// NGINX interpolates neither in a location.
		for _, v := range []string{host, regexConstructs.ReplaceAllString(path, ""), backend} {
			if strings.ContainsAny(v, "\"\\$\r\n\x00;{}# \t'") {
				t.Fatalf("accepted %q into:\n%s", v, text)
			}
		}
	})
}

// TestFuzzInputsPassNginx renders every seed and every input the fuzzer has
// saved (testdata/fuzz/FuzzRenderServer) that the renderer accepts, and runs
// nginx -t on the result: an accepted value must also be valid NGINX.
func TestFuzzInputsPassNginx(t *testing.T) {
	inputs := append([]struct{ host, path, backend string }{}, renderSeeds...)
	files, _ := filepath.Glob("testdata/fuzz/FuzzRenderServer/*")
	for _, f := range files {
		if in, ok := readCorpusEntry(t, f); ok {
			inputs = append(inputs, in)
		}
	}
	m := bus.NewModel()
	m.Servers[bus.Key(bus.KindServer, bus.DefaultServerName)] = serverFor(bus.DefaultServerName, "/", "", bus.PathPrefix)
	accepted := 0
	for i, in := range inputs {
		s := serverFor(in.host, in.path, in.backend, bus.PathPrefix)
		if _, err := renderServer(DefaultConfig(), bus.DefaultSettings(), s, backendContext{}, sources{}); err != nil {
			continue
		}
		// One server per input; a unique name keeps server_name distinct.
		s.Hostname = fmt.Sprintf("in%d.%s", i, strings.TrimPrefix(s.Hostname, "*."))
		m.Servers[bus.Key(bus.KindServer, s.Hostname)] = s
		accepted++
	}
	art, errs := Render(DefaultConfig(), m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if accepted < 2 {
		t.Fatalf("only %d inputs accepted", accepted)
	}
	harness.NginxTest(t, harness.Nginx(t), harness.Prefix(t, art.Files))
}

// readCorpusEntry parses a "go test fuzz v1" file of FuzzRenderServer.
func readCorpusEntry(t *testing.T, path string) (struct{ host, path, backend string }, bool) {
	var in struct{ host, path, backend string }
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var values []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "string("); ok {
			s, err := strconv.Unquote(strings.TrimSuffix(v, ")"))
			if err != nil {
				return in, false
			}
			values = append(values, s)
		}
	}
	if len(values) != 3 {
		return in, false
	}
	in.host, in.path, in.backend = values[0], values[1], values[2]
	return in, true
}
