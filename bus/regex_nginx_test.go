package bus_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// RegexDiffEnv sets how many random patterns of each kind
// TestRegexAgreesWithNginx compiles with NGINX (make fuzz raises it).
const RegexDiffEnv = "SWITCHYARD_REGEX_DIFF_N"

// TestRegexAgreesWithNginx is the differential test of the safe regex
// grammar: random patterns built from the grammar, and random strings of
// the characters a path may hold, that our validator accepts are all
// compiled by the real NGINX (PCRE), as a location regex for paths and as
// an "if" regex for header patterns. Every one must pass nginx -t.
func TestRegexAgreesWithNginx(t *testing.T) {
	nginx := harness.Nginx(t)
	// The check itself sees what NGINX refuses (issue 10, finding 1).
	if bad := nginxRefuses(t, nginx, []string{"/a", "/[[:alpha:]-z]", "/^*", "/[::]"}, []string{`\d`}); len(bad) != 3 {
		t.Fatalf("nginx -t should refuse 3 of these, refused %q", bad)
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv(RegexDiffEnv)); err == nil && v > 0 {
		n = v
	}
	seed := rand.Int63()
	t.Logf("seed %d, %d patterns of each kind (%s)", seed, n, RegexDiffEnv)
	rng := rand.New(rand.NewSource(seed))
	var paths, headers []string
	for tries := 0; len(paths) < n && tries < 100*n; tries++ {
		var p string
		if tries%2 == 0 {
			p = "/" + genRegex(rng, bus.RegexPath, 0)
		} else {
			p = randomPathString(rng)
		}
		if bus.CheckRegexPath(p) == nil {
			paths = append(paths, p)
		}
	}
	for tries := 0; len(headers) < n && tries < 100*n; tries++ {
		p := genRegex(rng, bus.RegexHeader, 0)
		if bus.ValidateCanaryPattern(p) == nil {
			headers = append(headers, p)
		}
	}
	if len(paths) < n/2 || len(headers) < n/2 {
		t.Fatalf("the generators produced too few accepted patterns: %d paths, %d headers", len(paths), len(headers))
	}
	for _, bad := range nginxRefuses(t, nginx, paths, headers) {
		t.Errorf("accepted by the validator, refused by NGINX: %s", bad)
	}
	// Header patterns run in ngx.re, whose PCRE is the Lua module's own
	// (Debian links it to PCRE 1, NGINX itself to PCRE 2): compile them
	// there too, with the flags the balancer uses.
	for _, bad := range luaRefuses(t, nginx, append([]string{`a(`}, headers...)) {
		if bad != `a(` {
			t.Errorf("accepted by the validator, refused by ngx.re: %s", bad)
		}
	}
}

// luaRefuses starts NGINX with the Lua module and an init_by_lua block
// that compiles each pattern with ngx.re.match(..., "jo") and exits,
// returning the patterns ngx.re refuses. (init_by_lua does not run under
// nginx -t.) The first pattern must be refused, or the check is broken.
func luaRefuses(t *testing.T, nginx string, patterns []string) []string {
	var b strings.Builder
	fmt.Fprintf(&b, "load_module %q;\nload_module %q;\n", filepath.Join(harness.ModulesDir, "ndk_http_module.so"), filepath.Join(harness.ModulesDir, "ngx_http_lua_module.so"))
	b.WriteString("pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  init_by_lua_block {\n    local patterns = {\n")
	for _, p := range patterns {
		if strings.Contains(p, "]=====]") {
			t.Fatalf("pattern %q ends the Lua long string", p)
		}
		fmt.Fprintf(&b, "      [=====[%s]=====],\n", p)
	}
	b.WriteString(`    }
    for _, p in ipairs(patterns) do
      local _, err = ngx.re.match("", p, "jo")
      if err then io.stdout:write(p, "\n") end
    end
    io.stdout:flush()
    os.exit(0)
  }
}
`)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nginx, "-p", dir+"/", "-c", conf, "-e", "stderr", "-g", "daemon off; master_process off;")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nginx with the Lua check: %v: %s", err, stderr.String())
	}
	bad := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(bad) == 0 || bad[0] != patterns[0] {
		t.Fatalf("ngx.re did not refuse %q: the check is broken (output %q, %s)", patterns[0], out, stderr.String())
	}
	return bad
}

// nginxRefuses runs nginx -t on one configuration holding every pattern
// and, when it fails, bisects to name each pattern NGINX refuses.
func nginxRefuses(t *testing.T, nginx string, paths, headers []string) []string {
	if err := nginxCompiles(t, nginx, paths, headers); err == nil {
		return nil
	} else if len(paths)+len(headers) == 1 {
		return []string{fmt.Sprintf("paths %q headers %q: %v", paths, headers, err)}
	}
	var bad []string
	if len(paths) > 0 {
		h := len(paths) / 2
		if h == 0 {
			bad = append(bad, nginxRefuses(t, nginx, paths, nil)...)
		} else {
			bad = append(bad, nginxRefuses(t, nginx, paths[:h], nil)...)
			bad = append(bad, nginxRefuses(t, nginx, paths[h:], nil)...)
		}
	}
	if len(headers) > 0 {
		h := len(headers) / 2
		if h == 0 {
			bad = append(bad, nginxRefuses(t, nginx, nil, headers)...)
		} else {
			bad = append(bad, nginxRefuses(t, nginx, nil, headers[:h])...)
			bad = append(bad, nginxRefuses(t, nginx, nil, headers[h:])...)
		}
	}
	return bad
}

func nginxCompiles(t *testing.T, nginx string, paths, headers []string) error {
	var b strings.Builder
	b.WriteString("pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  access_log off;\n  server {\n    listen 127.0.0.1:1;\n")
	for _, p := range paths {
		// As the renderer writes it: case-insensitive, anchored, quoted.
		fmt.Fprintf(&b, "    location ~* \"^%s\" { return 204; }\n", p)
	}
	b.WriteString("    location / {\n")
	for _, h := range headers {
		// NGINX's parser reads "\\" in a quoted string as one backslash.
		fmt.Fprintf(&b, "      if ($http_x_canary ~ \"%s\") { return 204; }\n", strings.ReplaceAll(h, `\`, `\\`))
	}
	b.WriteString("    }\n  }\n}\n")
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nginx, "-t", "-q", "-p", dir+"/", "-c", conf, "-e", "stderr").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// genRegex builds a random pattern from the accepted grammar (and a little
// beyond it, for the validator to refuse).
func genRegex(rng *rand.Rand, d bus.RegexDialect, depth int) string {
	var b strings.Builder
	if d == bus.RegexHeader && depth == 0 && rng.Intn(3) == 0 {
		b.WriteByte('^')
	}
	for i, pieces := 0, 1+rng.Intn(4); i < pieces; i++ {
		b.WriteString(genAtom(rng, d, depth))
		if rng.Intn(3) == 0 {
			b.WriteString(genQuantifier(rng))
		}
	}
	if rng.Intn(6) == 0 {
		b.WriteByte('$')
	}
	return b.String()
}

const genLiterals = "abcXYZ019-_/~:@!,=%&"

func genAtom(rng *rand.Rand, d bus.RegexDialect, depth int) string {
	switch k := rng.Intn(10); {
	case k < 4:
		return string(genLiterals[rng.Intn(len(genLiterals))])
	case k == 4:
		return "."
	case k == 5 || k == 6:
		return genClass(rng, d)
	case k == 7 && d == bus.RegexHeader:
		return []string{`\d`, `\w`, `\s`, `\D`, `\.`, `\-`, `\(`, `\*`, `\{`, `\$`}[rng.Intn(10)]
	case depth < 3:
		var b strings.Builder
		b.WriteString([]string{"(", "(?:"}[rng.Intn(2)])
		for i, branches := 0, 1+rng.Intn(3); i < branches; i++ {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(genRegex(rng, d, depth+1))
		}
		b.WriteByte(')')
		return b.String()
	}
	return "x"
}

func genClass(rng *rand.Rand, d bus.RegexDialect) string {
	items := []string{"a-z", "A-Z", "0-9", "b-f", "-", "_", ".", "/", "~", "%", ":", "a", "Q", "7", "+", "*", "(", ")", "|", "@"}
	if d == bus.RegexHeader {
		items = append(items, `\d`, `\w`, `\]`, `\-`, `\\`)
	}
	var b strings.Builder
	b.WriteByte('[')
	if rng.Intn(4) == 0 {
		b.WriteByte('^')
	}
	for i, n := 0, 1+rng.Intn(4); i < n; i++ {
		b.WriteString(items[rng.Intn(len(items))])
	}
	b.WriteByte(']')
	return b.String()
}

func genQuantifier(rng *rand.Rand) string {
	q := []string{"*", "+", "?", "{2}", "{1,3}", "{0,}", "{3,5}", "{0,100}", "{7}"}[rng.Intn(9)]
	if rng.Intn(5) == 0 {
		q += "?"
	}
	return q
}

// pathAlphabet is every character bus.RegexPathPattern lets through.
const pathAlphabet = "abcXYZ019._-/~()*+?[]|^:@!,=%&{}$"

func randomPathString(rng *rand.Rand) string {
	b := []byte{'/'}
	for i, n := 0, 1+rng.Intn(12); i < n; i++ {
		b = append(b, pathAlphabet[rng.Intn(len(pathAlphabet))])
	}
	return string(b)
}
