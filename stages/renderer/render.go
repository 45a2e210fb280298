// Package renderer turns the annotated model into what the applier needs:
// nginx.conf and one file per server (the static part, from templates/), and
// the backends and certificates for the Lua endpoint (the dynamic part).
// Render is pure: same model and config, same bytes.
package renderer

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/templates"
)

// Config is what the renderer needs besides the model: how NGINX is set
// up. The run flags fill it in. Where NGINX listens and its sockets are
// each applier's own: the renderer writes placeholders for them
// (bus.Placeholder*), which the applier fills in.
type Config struct {
	ModulesDir string // where Debian keeps the dynamic modules
	// WorkerProcesses, when set (--worker-processes), overrides the
	// ConfigMap's worker-processes.
	WorkerProcesses string
	ConfigDictSize  string
	CertDictSize    string
	// MetricsDictSize is the size of the shared dict the per-request
	// metrics are counted in (lua/switchyard/metrics.lua); "" turns them
	// off (no --metrics-addr: nothing would read them).
	MetricsDictSize string
	// MetricsBuckets are the histograms' bucket bounds (--time-buckets,
	// --length-buckets, --size-buckets); nil ones keep ingress-nginx's
	// defaults, which metrics.lua holds.
	MetricsBuckets MetricsBuckets
	// OTLPEndpoint is the pipeline's --otlp-endpoint: where request spans
	// go when the ConfigMap names no otlp-collector-host (tracing.go).
	OTLPEndpoint string
	AccessLog    bool
	// User and Group the workers run as; empty keeps the master's user.
	User, Group string
	// Resolvers are the DNS servers NGINX asks for ExternalName Services
	// ("10.0.0.53", "127.0.0.1:5353", "[fd00::53]").
	Resolvers []string
	// SSLPassthrough is --enable-ssl-passthrough: the stream module owns
	// the HTTPS addresses and routes by SNI name (passthrough.go); the http
	// module's TLS listener moves to the applier's TLS socket, and its
	// passthrough socket is the stream server of the passthrough hosts.
	SSLPassthrough bool
	// StreamServices is set when --tcp-services-configmap or
	// --udp-services-configmap is: the stream block holds ServicesFile.
	StreamServices bool
	// LuaRouting (--lua-routing) serves the hosts that need no NGINX
	// directive of their own from the catch-all server, routed in Lua,
	// instead of a server block each (routes.go).
	LuaRouting bool
	// TestRefuseIngresses ("namespace/name") is for tests only (set from
	// SWITCHYARD_TEST_REFUSE_INGRESS, which no flag or document offers):
	// each location of these Ingresses gets TestRefusedDirective, which
	// NGINX refuses, so a test can see a refusal traced to its Ingress end
	// to end through the real binary.
	TestRefuseIngresses []string
	// ModSecurity is how ModSecurity runs here (modsecurity.go).
	ModSecurity ModSecurityConfig
	// loadModSecurity: some server runs ModSecurity, so nginx.conf loads
	// its module (set by the incremental renderer before nginx.conf).
	loadModSecurity bool
}

func (c Config) testRefuse() map[string]bool {
	if len(c.TestRefuseIngresses) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, name := range c.TestRefuseIngresses {
		m[name] = true
	}
	return m
}

// DefaultConfig is `switchyard run` without flags.
func DefaultConfig() Config {
	return Config{
		ModulesDir:     "/usr/lib/nginx/modules",
		ConfigDictSize: "64m",
		CertDictSize:   "32m",
		AccessLog:      true,
	}
}

// Artifacts is the renderer's output.
type Artifacts struct {
	// Files maps a path below NGINX's configuration directory to content.
	Files map[string]string
	// Backends are the balancer's payload, by backend name.
	Backends map[string]*bus.Backend
	// Certificates are the dynamic certificates, by "namespace/name".
	Certificates map[string]*LuaCertificate
	// Routes are the hosts routed in Lua (--lua-routing), by host.
	Routes map[string]*LuaRoute
	// Passthrough are the endpoints of the TLS passthrough hosts
	// (--enable-ssl-passthrough), by host.
	Passthrough map[string]*bus.PassthroughEndpoints
}

// LuaCertificate is one certificate and the hosts it is served for.
type LuaCertificate struct {
	PEM   string   `json:"pem"`
	Hosts []string `json:"hosts"`
	// Default: --default-ssl-certificate, served when no host matches.
	Default bool `json:"default,omitempty"`
	// OCSP is enable-ocsp: the applier fetches and staples an OCSP
	// response for it.
	OCSP bool `json:"ocsp,omitempty"`
}

// MainFile is the path of the main configuration file.
const MainFile = "nginx.conf"

// ServerFile is the path of one server's file.
func ServerFile(hostname string) string { return "servers/" + bus.EscapeToken(hostname) + ".conf" }

// Render renders the whole model. It is the incremental Renderer fed
// everything at once, so both share every rule. A server that fails a check
// is left out and reported, so one bad object never takes the others down.
func Render(cfg Config, m bus.Model) (Artifacts, []error) {
	return RenderRefused(cfg, m, nil)
}

// RenderRefused renders the model as Render does, honouring the applier's
// refusals (by table key): a refused Ingress whose revision is still the
// one refused is left out, a refused ConfigMap key falls back to its
// default.
func RenderRefused(cfg Config, m bus.Model, refusals map[string]*bus.Refusal) (Artifacts, []error) {
	r := NewRenderer(cfg)
	r.SetSettings(m.Settings)
	r.SetStreams(m.Streams)
	for key, ref := range refusals {
		r.SetRefusal(key, ref)
	}
	for key, s := range m.Servers {
		r.SetServer(key, s)
	}
	for _, b := range m.Backends {
		r.SetBackend(b.Name, b)
	}
	for _, c := range m.Certificates {
		r.SetCertificate(c.Namespace+"/"+c.Name, c)
	}
	out, errs := r.Flush()
	sortErrors(errs)
	// The first flush of a renderer is everything it renders.
	art := Artifacts{Files: map[string]string{}, Backends: r.out.Backends, Certificates: r.out.Certificates, Routes: r.out.Routes,
		Passthrough: r.out.Passthrough}
	for _, v := range out.Values {
		if f, ok := v.(bus.RenderedFile); ok {
			art.Files[f.Path] = f.Content
		}
	}
	return art, errs
}

func sortErrors(errs []error) {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

// hstsHeader is the Strict-Transport-Security value, or "" when off.
func hstsHeader(s bus.Settings) string {
	if !s.HSTS {
		return ""
	}
	h := "max-age=" + strconv.Itoa(s.HSTSMaxAge)
	if s.HSTSIncludeSubdomains {
		h += "; includeSubDomains"
	}
	if s.HSTSPreload {
		h += "; preload"
	}
	return h
}

// location is one NGINX location before it is resolved for the template
// (view.go): the path it matches and what the model says of it.
type location struct {
	Modifier string // "= " for exact matches, "" for prefixes
	Path     string
	Backend  string
	// Features are what the annotation plugins decided for the location.
	Features *bus.Features
	// RateLimitID prefixes the names of the location's rate limit zones.
	RateLimitID string
	// RewriteRegex is the rewrite directive's regex ("^" and the path)
	// when the location has a rewrite-target other than its path.
	RewriteRegex string
	// sortPath is the Ingress path, for ordering regex locations.
	sortPath string
	// Ingress owns the location.
	Ingress string
	// Canary is the canary Ingress declared for this host and path.
	Canary *bus.LocationCanary
	// labels are the Ingress path and Service the location serves: the
	// per-request metrics' labels (metrics.go).
	labels metricLabels
}

// backendContext is what a server's rendering needs to know of backends.
type backendContext struct {
	hasDefault bool
	external   map[string]string // backend name → "host:port"
	// hostExists says whether a server for a hostname exists, so a
	// from-to-www-redirect server never shadows a real one.
	hostExists func(host string) bool
}

func renderServer(cfg Config, settings bus.Settings, s *bus.Server, backends backendContext, src sources) (string, error) {
	view, err := newServerView(cfg, settings, s, backends, src)
	if err != nil {
		return "", err
	}
	return execute("server.conf.tmpl", view)
}

// nginxLocations maps Ingress paths to NGINX locations. Exact is "= /p";
// Prefix /p is "/p/" plus "= /p", so /p matches /p and /p/x but not /px;
// a trailing slash in a Prefix rule is ignored. The paths of an Ingress
// that uses a regex (use-regex, or a rewrite-target other than its path)
// are all case-insensitive regex locations "~* ^path", as in
// ingress-nginx; unlike ingress-nginx, the other Ingresses of the host keep
// their Exact and Prefix locations (regexLocations says why).
func nginxLocations(locs []bus.Location) ([]location, error) {
	regexIngress := regexIngresses(locs)
	var plain, regex []bus.Location
	for _, l := range locs {
		if isRegexLocation(l, regexIngress) {
			regex = append(regex, l)
		} else {
			plain = append(plain, l)
		}
	}
	out, err := prefixLocations(plain)
	if err != nil {
		return nil, err
	}
	rx, err := regexLocations(regex)
	if err != nil {
		return nil, err
	}
	return append(out, rx...), nil
}

// prefixLocations renders Exact and Prefix paths. A protected Prefix
// location (protected) is "^~ /p/": NGINX then never looks for a regex
// location for a request under it, so no regex path of another Ingress can
// take such a request past the protection.
func prefixLocations(locs []bus.Location) ([]location, error) {
	exact := map[string]bool{}
	for _, l := range locs {
		if l.PathType == bus.PathExact {
			exact[l.Path] = true
		}
	}
	var out []location
	seen := map[location]bool{}
	add := func(v location) {
		// One location per path: the first Ingress to ask for it has it.
		owner, labels := v.Ingress, v.labels
		v.Ingress, v.labels = "", metricLabels{}
		if !seen[v] {
			seen[v] = true
			v.Ingress, v.labels = owner, labels
			out = append(out, v)
		}
	}
	for _, l := range locs {
		if err := checkLocation(l, bus.RegexPathPattern.MatchString(l.Path)); err != nil {
			return nil, err
		}
		rl := locationRateLimitID(l)
		prefix := ""
		if protected(l.Features) {
			prefix = "^~ "
		}
		switch {
		case l.PathType == bus.PathExact:
			add(location{Modifier: "= ", Path: l.Path, Backend: l.Backend, Features: l.Features, RateLimitID: rl, Ingress: l.Ingress, Canary: l.Canary, labels: labelsOf(l)})
		case l.Path == "/":
			add(location{Modifier: prefix, Path: "/", Backend: l.Backend, Features: l.Features, RateLimitID: rl, Ingress: l.Ingress, Canary: l.Canary, labels: labelsOf(l)})
		default:
			p := strings.TrimRight(l.Path, "/")
			add(location{Modifier: prefix, Path: p + "/", Backend: l.Backend, Features: l.Features, RateLimitID: rl, Ingress: l.Ingress, Canary: l.Canary, labels: labelsOf(l)})
			if !exact[p] {
				add(location{Modifier: "= ", Path: p, Backend: l.Backend, Features: l.Features, RateLimitID: rl, Ingress: l.Ingress, Canary: l.Canary, labels: labelsOf(l)})
			}
		}
	}
	return withoutAutoRedirect(out), nil
}

// withoutAutoRedirect keeps NGINX from answering 301 on its own. NGINX
// redirects a request for /p to /p/ when a location named "/p/" (exact or
// prefix) proxies and no location is named "/p" itself; the Ingress spec
// (and ingress-nginx) serve /p as if "/p/" did not exist, which for an
// Exact "/p/" means whatever else matches /p, often a 404. So for every
// "/p/" without a "/p", a prefix location "/p" is added that is a copy of
// the longest prefix location covering /p (the one /p, and anything else
// starting with /p, would get anyway), or a 404 when none does. A copy
// without "=" leaves regex locations their say, as before.
func withoutAutoRedirect(locs []location) []location {
	named := map[string]bool{}
	for _, l := range locs {
		named[l.Path] = true
	}
	out := locs
	for _, l := range locs {
		if len(l.Path) < 2 || !strings.HasSuffix(l.Path, "/") {
			continue
		}
		p := strings.TrimSuffix(l.Path, "/")
		if named[p] {
			continue
		}
		named[p] = true
		fallback := location{Path: p, Ingress: l.Ingress}
		if c, ok := coveringPrefix(locs, p); ok {
			fallback = c
			fallback.Path = p
		}
		out = append(out, fallback)
	}
	return out
}

// coveringPrefix is the longest prefix (not exact) location matching uri.
func coveringPrefix(locs []location, uri string) (location, bool) {
	var best location
	found := false
	for _, l := range locs {
		if l.Modifier == "= " || !strings.HasPrefix(uri, l.Path) {
			continue
		}
		if !found || len(l.Path) > len(best.Path) {
			best, found = l, true
		}
	}
	return best, found
}

// checkLocation checks what every location writes into nginx.conf besides
// its path; pathOK says whether the path passed its check.
func checkLocation(l bus.Location, pathOK bool) error {
	if !pathOK {
		return fmt.Errorf("location %q: invalid path", l.Path)
	}
	if l.Backend != "" && !backendNamePattern.MatchString(l.Backend) {
		return fmt.Errorf("location %q: invalid backend name %q", l.Path, l.Backend)
	}
	if err := l.Features.Validate(); err != nil {
		return fmt.Errorf("location %q of %s: features: %w", l.Path, l.Ingress, err)
	}
	return nil
}

// The renderer checks every value again before it reaches nginx.conf, with
// whole-string patterns that exclude quotes, '$', '\', ';', braces,
// whitespace and control characters. The translator checked them already;
// this is the line that holds if a future producer forgets.
var (
	hostPattern        = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	backendNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,252}$`)
	externalPattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?:[0-9]{1,5}$`)
	resolverPattern    = regexp.MustCompile(`^([0-9.]+|\[[0-9a-fA-F:.]+\])(:[0-9]{1,5})?$`)
	// unsafeInQuotes are the characters a double-quoted NGINX string must
	// not hold: they end it, escape out of it or interpolate into it.
	unsafeInQuotes = "\"\\$\r\n\x00"
	// Operator settings: plain words, sizes and paths (listen addresses
	// are the applier's: internal/nginx Local).
	settingPattern = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)
)

// tmpl holds the templates. They get no functions: the views (view.go,
// view_main.go, auth.go, ratelimit.go) hand them every value resolved,
// checked and quoted, so a template only prints.
var tmpl = template.Must(template.New("").ParseFS(templates.FS, "*.tmpl"))

// logFormat writes log-format-upstream in single quotes. The settings
// parser allows $variables and double quotes in it, and nothing that could
// end the quotes or the line.
func logFormat(s string) (string, error) {
	if strings.ContainsAny(s, "'\\\r\n\x00") {
		return "", fmt.Errorf("refusing to write log format %q into nginx.conf", s)
	}
	return "'" + s + "'", nil
}

// luaString writes a value as a Lua string literal in nginx.conf; like
// quote, it refuses what could end the literal instead of escaping it.
func luaString(s string) (string, error) {
	if strings.ContainsAny(s, unsafeInQuotes+"'") {
		return "", fmt.Errorf("refusing to write %q into a Lua literal", s)
	}
	return `"` + s + `"`, nil
}

// executeBuffers keeps the template output buffers between calls: a
// full render executes a template per server, and growing a fresh buffer
// each time was a third of the renderer's allocations at 10,000 servers.
var executeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps one huge output (the http block at 10,000 routes)
// from being held for good.
const maxPooledBuffer = 1 << 20

func execute(name string, data any) (string, error) {
	buf := executeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			executeBuffers.Put(buf)
		}
	}()
	if err := tmpl.ExecuteTemplate(buf, name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// quote writes a value as a double-quoted NGINX string. It refuses what
// could escape the quotes instead of escaping it: no legitimate value the
// patterns above admit contains any of those characters.
func quote(s string) (string, error) {
	if strings.ContainsAny(s, unsafeInQuotes) {
		return "", fmt.Errorf("refusing to write %q into nginx.conf", s)
	}
	return `"` + s + `"`, nil
}

// serverName renders server_name. A wildcard host matches exactly one
// label, as the Ingress spec says (NGINX's own "*.x" would match more), so
// it becomes a regex. The host matched hostPattern, so it holds only
// letters, digits, '-' and '.'.
func serverName(host string) (string, error) {
	if host == bus.DefaultServerName {
		return "_", nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return `"~^[^.]+\.` + strings.ReplaceAll(rest, ".", `\.`) + `$"`, nil
	}
	return quote(host)
}
