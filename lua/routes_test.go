package lua_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Tests of POST /configuration/routes and /configuration/routes/delta
// (configuration.lua, router.lua's validate, the "routes" store of
// util/backend_store.lua), run by TestDataPlane.

var routesVersionRE = regexp.MustCompile(`^routes version (\d+)\n$`)

func (dp *dataPlane) routeHosts() string {
	dp.t.Helper()
	status, text := dp.configRequest("GET", "/configuration/routes", "")
	var routes []struct {
		Host string `json:"host"`
	}
	if status != 200 || json.Unmarshal([]byte(text), &routes) != nil {
		dp.t.Fatalf("GET routes: %d %q", status, text)
	}
	var hosts []string
	for _, r := range routes {
		hosts = append(hosts, r.Host)
	}
	return strings.Join(hosts, ",")
}

func route(host string) string {
	return `{"host":"` + host + `","locations":[{"match":"","path":"/","kind":"proxy","upstream":"b","backend":"b",` +
		`"ssl_redirect":true,"force_ssl_redirect":false,"preserve_trailing_slash":false}]}`
}

// Routes are stored and replaced whole or by delta; anything malformed is
// refused as a whole and leaves the stored routes as they were.
func (dp *dataPlane) testRoutesEndpoint(t *testing.T) {
	// b carries every optional field a location may have.
	full := strings.Replace(route("b.example.com"), `"kind"`, `"connect_timeout":2,"send_timeout":3,"read_timeout":31536000,`+
		`"upstream_vhost":"[::1]:8080","connection_header":"keep-alive, upgrade","body_limit":1099511627776,`+
		`"rewrite_regex":"(?i)^/a(/|$)(.*)","rewrite_target":"/b/$2",`+
		`"cors":{"origins":"https://a.example.com https://*.example.org:8443","methods":"GET, PUT","headers":"DNT,X-A",`+
		`"expose_headers":"","credentials":true,"max_age":600},`+
		`"access":["deny 192.0.2.0/24","deny ::ffff:10.0.0.0/104","allow 10.0.0.0/8","allow 2001:db8::/32","deny all","satisfy any"],"kind"`, 1)
	moved := strings.Replace(route("m.example.com"), `"kind":"proxy"`,
		`"kind":"redirect","redirect_code":308,"redirect_url":"https://n.example.com:8443/a?b=c#d"`, 1)
	status, text := dp.configRequest("POST", "/configuration/routes", "["+route("a.example.com")+","+full+","+moved+"]")
	m := routesVersionRE.FindStringSubmatch(text)
	if status != 201 || m == nil {
		t.Fatalf("POST routes: %d %q", status, text)
	}
	version, _ := strconv.Atoi(m[1])
	if got := dp.routeHosts(); got != "a.example.com,b.example.com,m.example.com" {
		t.Fatalf("stored routes %q", got)
	}
	for name, body := range map[string]string{
		"upper-case host":     "[" + strings.Replace(route("a.example.com"), "a.example", "A.example", 1) + "]",
		"a wildcard inside":   "[" + route("a.*.example.com") + "]",
		"a bare wildcard":     "[" + route("*") + "]",
		"a wildcard label":    "[" + route("*a.example.com") + "]",
		"unknown match":       "[" + strings.Replace(route("a.example.com"), `"match":""`, `"match":"@"`, 1) + "]",
		"invalid regex":       "[" + strings.Replace(route("a.example.com"), `"match":"","path":"/"`, `"match":"~*","path":"/(x"`, 1) + "]",
		"proxy, no backend":   "[" + strings.Replace(route("a.example.com"), `"backend":"b",`, "", 1) + "]",
		"unknown kind":        "[" + strings.Replace(route("a.example.com"), `"kind":"proxy"`, `"kind":"exec"`, 1) + "]",
		"no locations":        `[{"host":"a.example.com","locations":[]}]`,
		"duplicate host":      "[" + route("a.example.com") + "," + route("a.example.com") + "]",
		"a boolean as string": "[" + strings.Replace(route("a.example.com"), `"ssl_redirect":true`, `"ssl_redirect":"yes"`, 1) + "]",
		"not an array":        route("a.example.com"),
		"a redirect without a code": "[" + strings.Replace(route("a.example.com"), `"kind":"proxy"`,
			`"kind":"redirect","redirect_url":"https://b.example.com/"`, 1) + "]",
		"a redirect code 300": "[" + strings.Replace(route("a.example.com"), `"kind":"proxy"`,
			`"kind":"redirect","redirect_code":300,"redirect_url":"https://b.example.com/"`, 1) + "]",
		"a redirect URL with a header": "[" + strings.Replace(route("a.example.com"), `"kind":"proxy"`,
			`"kind":"redirect","redirect_code":301,"redirect_url":"https://b.example.com/
X: 1"`, 1) + "]",
		"a redirect to a relative URL": "[" + strings.Replace(route("a.example.com"), `"kind":"proxy"`,
			`"kind":"redirect","redirect_code":301,"redirect_url":"/x"`, 1) + "]",
		"a rewrite target without regex": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"rewrite_target":"/$1","kind"`, 1) + "]",
		"an unanchored rewrite regex": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"rewrite_regex":"(?i)/a(.*)","rewrite_target":"/$1","kind"`, 1) + "]",
		"an invalid rewrite regex": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"rewrite_regex":"(?i)^/a(.*","rewrite_target":"/$1","kind"`, 1) + "]",
		"a rewrite target with a query": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"rewrite_regex":"(?i)^/a(.*)","rewrite_target":"/b?c=$1","kind"`, 1) + "]",
		"a rewrite target naming a variable": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"rewrite_regex":"(?i)^/a(.*)","rewrite_target":"/$host","kind"`, 1) + "]",
		"a zero body limit":     "[" + strings.Replace(route("a.example.com"), `"kind"`, `"body_limit":0,"kind"`, 1) + "]",
		"a body limit as size":  "[" + strings.Replace(route("a.example.com"), `"kind"`, `"body_limit":"1k","kind"`, 1) + "]",
		"a fraction body limit": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"body_limit":10.5,"kind"`, 1) + "]",
		"a zero timeout":        "[" + strings.Replace(route("a.example.com"), `"kind"`, `"read_timeout":0,"kind"`, 1) + "]",
		"a fraction timeout":    "[" + strings.Replace(route("a.example.com"), `"kind"`, `"connect_timeout":1.5,"kind"`, 1) + "]",
		"a timeout as string":   "[" + strings.Replace(route("a.example.com"), `"kind"`, `"send_timeout":"5","kind"`, 1) + "]",
		"a header in vhost": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"upstream_vhost":"a
X-Evil: 1","kind"`, 1) + "]",
		"a vhost as number": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"upstream_vhost":5,"kind"`, 1) + "]",
		"a quote in connection header": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"connection_header":"close\"","kind"`, 1) + "]",
		"cors as a string": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"cors":"*","kind"`, 1) + "]",
		"a cors origin with a path": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"cors":{"origins":"https://a.example.com/x","methods":"GET","headers":"X","expose_headers":"","credentials":false,"max_age":1},"kind"`, 1) + "]",
		"a header in cors methods": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"cors":{"origins":"*","methods":"GET\r\nX-Evil: 1","headers":"X","expose_headers":"","credentials":false,"max_age":1},"kind"`, 1) + "]",
		"cors without credentials": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"cors":{"origins":"*","methods":"GET","headers":"X","expose_headers":"","max_age":1},"kind"`, 1) + "]",
		"access as a string": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"access":"deny all","kind"`, 1) + "]",
		"no access lines":    "[" + strings.Replace(route("a.example.com"), `"kind"`, `"access":[],"kind"`, 1) + "]",
		"a CIDR with host bits": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"access":["allow 10.0.0.1/8","deny all"],"kind"`, 1) + "]",
		"a malformed IPv6 CIDR": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"access":["deny 1::2::3/128"],"kind"`, 1) + "]",
		"an access line not allow or deny": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"access":["return 200"],"kind"`, 1) + "]",
		"an access line as number": "[" + strings.Replace(route("a.example.com"), `"kind"`, `"access":[5],"kind"`, 1) + "]",
		"a negative cors max age": "[" + strings.Replace(route("a.example.com"), `"kind"`,
			`"cors":{"origins":"*","methods":"GET","headers":"X","expose_headers":"","credentials":false,"max_age":-1},"kind"`, 1) + "]",
	} {
		if status, text := dp.configRequest("POST", "/configuration/routes", body); status != 400 {
			t.Errorf("%s: POST answered %d %q, want 400", name, status, text)
		}
	}
	if got := dp.routeHosts(); got != "a.example.com,b.example.com,m.example.com" {
		t.Fatalf("a refused POST changed the stored routes: %q", got)
	}
	bad := `{"base":` + strconv.Itoa(version) + `,"routes":[` + route("c.example.com") + `],"removed":["c.example.com"]}`
	if status, text := dp.configRequest("POST", "/configuration/routes/delta", bad); status != 400 {
		t.Errorf("a delta that changes and removes one host: %d %q, want 400", status, text)
	}
	stale := `{"base":` + strconv.Itoa(version+5) + `,"routes":[` + route("c.example.com") + `]}`
	if status, text := dp.configRequest("POST", "/configuration/routes/delta", stale); status != 412 {
		t.Errorf("a delta on another version: %d %q, want 412", status, text)
	}
	// A one-label wildcard is a host too.
	good := `{"base":` + strconv.Itoa(version) + `,"routes":[` + route("c.example.com") + `,` + route("*.w.example.com") +
		`],"removed":["a.example.com"]}`
	if status, text := dp.configRequest("POST", "/configuration/routes/delta", good); status != 201 {
		t.Fatalf("delta: %d %q", status, text)
	}
	if got := dp.routeHosts(); got != "*.w.example.com,b.example.com,c.example.com,m.example.com" {
		t.Errorf("after the delta the stored routes are %q, want the wildcard, b, c and m", got)
	}
	// The backends are a store of their own: the routes left them alone.
	if status, text := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || strings.Contains(text, "example.com") {
		t.Errorf("backends after the routes: %d %q", status, text)
	}
}
