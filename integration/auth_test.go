package integration

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"switchyard.dev/switchyard/integration/harness"
)

func secretYAML(ns, name string, data map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData:\n", name, ns)
	for k, v := range data {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	return b.String()
}

const authPrefix = "nginx.ingress.kubernetes.io/"

func basicAuthAnnotations(secret string) map[string]string {
	return map[string]string{authPrefix + "auth-type": "basic", authPrefix + "auth-secret": secret, authPrefix + "auth-realm": "Switchyard test"}
}

func basicHeader(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

// Test vectors for the password "pw": apr1 from `openssl passwd -apr1
// -salt abcdefgh pw`, SHA-512 crypt from `openssl passwd -6 -salt abcdefgh
// pw`, DES crypt from crypt(3) with salt "ab". bcrypt and {SHA} are
// computed here.
const (
	apr1Hash   = "$apr1$abcdefgh$5VEbMkemELfbhC5ck.U.z1"
	sha512Hash = "$6$abcdefgh$KQeXafAQAaOoKTevphVU215RvJdgzyfASRasIOuh12hO8u0r1bGW92ZnTmC9IjsiQ8VPiTXBiZF49dFL1U4wX/"
	desHash    = "abzlUXK5ed5rs"
)

func TestBasicAuthThroughNginx(t *testing.T) {
	bcryptHash, err := bcrypt.GenerateFromPassword([]byte("pw"), 5)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte("pw"))
	shaHash := "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
	users := map[string]string{
		"apr1": apr1Hash, "bcrypt": string(bcryptHash), "sha": shaHash, "sha512": sha512Hash, "des": desHash,
		// $2y$ is what htpasswd -B writes; crypt(3) reads it as $2b$.
		"bcrypt2y": "$2y$" + string(bcryptHash)[4:],
	}
	var file strings.Builder
	file.WriteString("# users\n")
	for u, h := range users {
		fmt.Fprintf(&file, "%s:%s\n", u, h)
	}
	e := newEnv(t, map[string]string{
		"secret.yaml": secretYAML("default", "basic-users", map[string]string{"auth": file.String()}) + "---\n" +
			secretYAML("default", "map-users", map[string]string{"mapuser": apr1Hash}),
		"basic.yaml": harness.AnnotatedIngressYAML("default", "basic", "basic.example.com", basicAuthAnnotations("basic-users"),
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"map.yaml": harness.AnnotatedIngressYAML("default", "map", "map.example.com",
			map[string]string{authPrefix + "auth-type": "basic", authPrefix + "auth-secret": "default/map-users", authPrefix + "auth-secret-type": "auth-map"},
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"missing.yaml": harness.AnnotatedIngressYAML("default", "missing", "missing.example.com", basicAuthAnnotations("no-such-secret"),
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
	})
	r := e.eventually("basic.example.com", "/", "basic auth to ask for credentials", func(r harness.Response) bool { return r.Status == 401 })
	if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="Switchyard test"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	for user := range users {
		if r := e.getWith("basic.example.com", "/x", basicHeader(user, "pw")); r.Status != 200 || r.Echo == nil || r.Echo.Service != "echo-a" {
			t.Errorf("user %s with the right password: got %d, want 200 from echo-a", user, r.Status)
		}
		if r := e.getWith("basic.example.com", "/x", basicHeader(user, "wrong")); r.Status != 401 {
			t.Errorf("user %s with a wrong password: got %d, want 401", user, r.Status)
		}
	}
	if r := e.getWith("basic.example.com", "/", basicHeader("nobody", "pw")); r.Status != 401 {
		t.Errorf("unknown user: got %d, want 401", r.Status)
	}
	if out := e.sy.Output.String(); strings.Contains(out, apr1Hash) || strings.Contains(out, desHash) {
		t.Errorf("switchyard's log holds a password hash")
	}
	e.eventually("map.example.com", "/", "auth-map to ask for credentials", func(r harness.Response) bool { return r.Status == 401 })
	if r := e.getWith("map.example.com", "/", basicHeader("mapuser", "pw")); r.Status != 200 || r.Echo == nil || r.Echo.Service != "echo-b" {
		t.Errorf("auth-map user: got %d, want 200 from echo-b", r.Status)
	}
	// A missing Secret fails closed; creating it opens the door to its users.
	e.eventually("missing.example.com", "/", "a missing Secret to answer 503", func(r harness.Response) bool { return r.Status == 503 })
	e.write("secret2.yaml", secretYAML("default", "no-such-secret", map[string]string{"auth": "late:" + apr1Hash + "\n"}))
	// Polled: a worker of the old config may still take a connection or two
	// while the master starts the new ones.
	e.eventuallyWithHeaders("missing.example.com", "/", basicHeader("late", "pw"), "the user of the created Secret to be let in", status(200))
	// A Secret without usable lines fails closed too, and the old users go.
	e.write("secret2.yaml", secretYAML("default", "no-such-secret", map[string]string{"auth": "late:{PLAIN}pw\n"}))
	e.eventually("missing.example.com", "/", "a Secret without valid users to answer 503", func(r harness.Response) bool { return r.Status == 503 })
}

// authService is a loopback auth service: "Authorization: ok" passes with
// X-Auth-User and a session cookie set, anything else is a 401 with a
// csrf cookie.
func startAuthService(t *testing.T) (string, *[]*http.Request) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var seen []*http.Request
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r)
		if r.Header.Get("Authorization") == "ok" {
			w.Header().Set("X-Auth-User", "alice")
			w.Header().Set("X-Other", "not copied")
			w.Header().Set("Set-Cookie", "session=refreshed; Path=/")
			w.WriteHeader(200)
			return
		}
		w.Header().Set("Set-Cookie", "csrf=fresh; Path=/")
		if r.Header.Get("Authorization") == "forbidden" {
			w.WriteHeader(403)
			return
		}
		w.WriteHeader(401)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), &seen
}

func TestExternalAuthThroughNginx(t *testing.T) {
	authURL, seen := startAuthService(t)
	// A port nothing listens on: the auth service is down.
	down := fmt.Sprintf("http://127.0.0.1:%d/auth", harness.FreePort(t))
	e := newEnv(t, map[string]string{
		"ext.yaml": harness.AnnotatedIngressYAML("default", "ext", "ext.example.com", map[string]string{
			authPrefix + "auth-url":              authURL + "/check?x=1",
			authPrefix + "auth-method":           "POST",
			authPrefix + "auth-response-headers": "X-Auth-User",
			authPrefix + "auth-request-redirect": "https://ext.example.com/back",
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"signin.yaml": harness.AnnotatedIngressYAML("default", "signin", "signin.example.com", map[string]string{
			authPrefix + "auth-url":    authURL + "/check",
			authPrefix + "auth-signin": "https://login.example.com/start",
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		// The oauth2-proxy recipe: NGINX variables in the three URLs.
		"vars.yaml": harness.AnnotatedIngressYAML("default", "vars", "vars.example.com", map[string]string{
			authPrefix + "auth-url":              authURL + "/vars?h=$host&u=$escaped_request_uri",
			authPrefix + "auth-signin":           "https://$host/oauth2/start?rd=$escaped_request_uri",
			authPrefix + "auth-request-redirect": "$scheme://$host$request_uri",
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"down.yaml": harness.AnnotatedIngressYAML("default", "down", "down.example.com", map[string]string{
			authPrefix + "auth-url": down,
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"always.yaml": harness.AnnotatedIngressYAML("default", "always", "always.example.com", map[string]string{
			authPrefix + "auth-url": authURL + "/check", authPrefix + "auth-always-set-cookie": "true",
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
	})
	e.eventually("ext.example.com", "/", "external auth to refuse", func(r harness.Response) bool { return r.Status == 401 })
	r := e.getWith("ext.example.com", "/app?q=1", map[string]string{"Authorization": "ok"})
	if r.Status != 200 || r.Echo == nil || r.Echo.Service != "echo-a" {
		t.Fatalf("authorized request: got %d, want 200 from echo-a", r.Status)
	}
	if got := r.Echo.Headers["X-Auth-User"]; len(got) != 1 || got[0] != "alice" {
		t.Errorf("upstream X-Auth-User = %q, want the auth response's alice", got)
	}
	if _, ok := r.Echo.Headers["X-Other"]; ok {
		t.Errorf("X-Other reached upstream but is not in auth-response-headers")
	}
	if got := r.Echo.Headers["X-Forwarded-Host"]; len(got) != 1 || got[0] != "ext.example.com" {
		t.Errorf("upstream X-Forwarded-Host = %q: the inherited proxy headers must still be sent", got)
	}
	last := (*seen)[len(*seen)-1]
	if last.Method != "POST" || last.URL.Path != "/check" || last.URL.RawQuery != "x=1" {
		t.Errorf("auth request %s %s, want POST /check?x=1", last.Method, last.URL)
	}
	if got := last.Header.Get("X-Original-URL"); got != "http://ext.example.com/app?q=1" {
		t.Errorf("auth request X-Original-URL = %q", got)
	}
	if got := last.Header.Get("X-Auth-Request-Redirect"); got != "https://ext.example.com/back" {
		t.Errorf("auth request X-Auth-Request-Redirect = %q", got)
	}
	// With auth-method, as ingress-nginx: the original URI and scheme too.
	if uri, scheme := last.Header.Get("X-Original-URI"), last.Header.Get("X-Scheme"); uri != "/app?q=1" || scheme != "http" {
		t.Errorf("auth request X-Original-URI %q, X-Scheme %q; want /app?q=1 and http", uri, scheme)
	}
	// The auth service's Set-Cookie (a session refresh) reaches the client
	// on a successful answer, and not on a refusal unless
	// auth-always-set-cookie says so.
	if got := r.Header.Get("Set-Cookie"); got != "session=refreshed; Path=/" {
		t.Errorf("authorized answer: Set-Cookie %q, want the auth service's", got)
	}
	if got := e.getWith("ext.example.com", "/", nil).Header.Get("Set-Cookie"); got != "" {
		t.Errorf("401 without auth-always-set-cookie: Set-Cookie %q", got)
	}
	if r := e.getWith("ext.example.com", "/", map[string]string{"Authorization": "forbidden"}); r.Status != 403 {
		t.Errorf("forbidden: got %d, want 403", r.Status)
	}
	// signin: a 401 becomes a redirect carrying the original URL.
	e.eventually("signin.example.com", "/", "signin to redirect", func(r harness.Response) bool { return r.Status == 302 })
	r = e.getWith("signin.example.com", "/a/b?c=d", nil)
	loc, err := url.Parse(r.Header.Get("Location"))
	if r.Status != 302 || err != nil || loc.Host != "login.example.com" || loc.Path != "/start" || loc.Query().Get("rd") != "http://signin.example.com/a/b?c=d" {
		t.Errorf("signin redirect: %d Location %q", r.Status, r.Header.Get("Location"))
	}
	if r := e.getWith("signin.example.com", "/", map[string]string{"Authorization": "ok"}); r.Status != 200 || r.Echo == nil || r.Echo.Service != "echo-b" {
		t.Errorf("signin Ingress, authorized: got %d, want 200 from echo-b", r.Status)
	}
	checkAuthVariables(t, e, seen)
	e.eventually("always.example.com", "/", "auth-always-set-cookie to pass the 401's cookie", func(r harness.Response) bool {
		return r.Status == 401 && r.Header.Get("Set-Cookie") == "csrf=fresh; Path=/"
	})
	// The auth service down: never open.
	r = e.eventually("down.example.com", "/", "auth service down to fail closed", func(r harness.Response) bool { return r.Status >= 500 })
	if r.Echo != nil {
		t.Errorf("the backend answered while the auth service is down")
	}
}

// checkAuthVariables checks the vars Ingress: the variables of auth-url,
// auth-request-redirect and auth-signin are expanded for the request.
func checkAuthVariables(t *testing.T, e *env, seen *[]*http.Request) {
	t.Helper()
	e.eventually("vars.example.com", "/", "signin with variables to redirect", func(r harness.Response) bool { return r.Status == 302 })
	r := e.getWith("vars.example.com", "/a/b?c=d", nil)
	loc, err := url.Parse(r.Header.Get("Location"))
	if r.Status != 302 || err != nil || loc.Scheme != "https" || loc.Host != "vars.example.com" || loc.Path != "/oauth2/start" ||
		loc.Query().Get("rd") != "/a/b?c=d" {
		t.Errorf("signin redirect with variables: %d Location %q", r.Status, r.Header.Get("Location"))
	}
	last := (*seen)[len(*seen)-1]
	if last.URL.Path != "/vars" || last.URL.Query().Get("h") != "vars.example.com" || last.URL.Query().Get("u") != "/a/b?c=d" {
		t.Errorf("auth request with variables: %s", last.URL)
	}
	if got := last.Header.Get("X-Auth-Request-Redirect"); got != "http://vars.example.com/a/b?c=d" {
		t.Errorf("auth request X-Auth-Request-Redirect with variables = %q", got)
	}
	if r := e.getWith("vars.example.com", "/", map[string]string{"Authorization": "ok"}); r.Status != 200 || r.Echo == nil || r.Echo.Service != "echo-b" {
		t.Errorf("vars Ingress, authorized: got %d, want 200 from echo-b", r.Status)
	}
}

// TestAuthAnnotationsRefused checks that hostile or unsupported auth
// values reject the Ingress: nothing of it is rendered, so its host falls
// to the default server (404), and nothing of the value reaches nginx.conf.
func TestAuthAnnotationsRefused(t *testing.T) {
	cases := map[string]map[string]string{
		"semicolon": {authPrefix + "auth-url": "http://127.0.0.1/a;return 200"},
		"brace":     {authPrefix + "auth-url": "http://127.0.0.1/}"},
		"variable":  {authPrefix + "auth-url": "http://127.0.0.1/$remote_user"},
		"vartail":   {authPrefix + "auth-url": "http://127.0.0.1/$hostx"},
		"varbrace":  {authPrefix + "auth-url": "http://127.0.0.1/${host}"},
		"varsignin": {authPrefix + "auth-url": "http://127.0.0.1/a", authPrefix + "auth-signin": `https://$host/s?rd=$request_uri";return 200;"`},
		"newline":   {authPrefix + "auth-url": "http://127.0.0.1/\nreturn 200;"},
		"traversal": {authPrefix + "auth-type": "basic", authPrefix + "auth-secret": "../../etc/passwd"},
		"other-ns":  {authPrefix + "auth-type": "basic", authPrefix + "auth-secret": "kube-system/users"},
		"digest":    {authPrefix + "auth-type": "digest", authPrefix + "auth-secret": "users"},
		"no-type":   {authPrefix + "auth-secret": "users"},
		"cache":     {authPrefix + "auth-url": "http://127.0.0.1/a", authPrefix + "auth-cache-key": `$http_x_probe_cachekey";return 200;"`},
		"cachevar":  {authPrefix + "auth-url": "http://127.0.0.1/a", authPrefix + "auth-cache-key": "$request_body$http_x_probe_cachekey"},
		"cachedur":  {authPrefix + "auth-url": "http://127.0.0.1/a", authPrefix + "auth-cache-key": "k", authPrefix + "auth-cache-duration": "200 5m;return 200"},
		"snippet":   {authPrefix + "auth-url": "http://127.0.0.1/a", authPrefix + "auth-snippet": "return 200;"},
	}
	files := map[string]string{"users.yaml": secretYAML("default", "users", map[string]string{"auth": "u:" + apr1Hash})}
	for name, a := range cases {
		files[name+".yaml"] = harness.AnnotatedIngressYAML("default", name, name+".example.com", a, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	files["good.yaml"] = harness.AnnotatedIngressYAML("default", "good", "good.example.com", basicAuthAnnotations("users"), harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	e := newEnv(t, files)
	e.eventually("good.example.com", "/", "the valid Ingress to be served", func(r harness.Response) bool { return r.Status == 401 })
	for name := range cases {
		if r := e.getWith(name+".example.com", "/", nil); r.Status != 404 || r.Echo != nil {
			t.Errorf("%s: got %d (echo answered: %v), want the default server's 404", name, r.Status, r.Echo != nil)
		}
	}
	conf := renderedConfig(t, e.sy.Prefix())
	for _, bad := range []string{"return 200", "$host\"", "etc/passwd", "kube-system", "x_probe_cachekey"} {
		if strings.Contains(conf, bad) {
			t.Errorf("rendered configuration holds %q", bad)
		}
	}
}

// renderedConfig concatenates every *.conf file below prefix.
func renderedConfig(t *testing.T, prefix string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(prefix, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".conf") {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGlobalAuthThroughNginx: the ConfigMap's global-auth-url asks the auth
// service about every location, with its response headers passed on,
// except where no-auth-locations, enable-global-auth: "false" or an
// Ingress's own auth-url say otherwise; an unreadable global-auth-url
// fails closed with 403 where it would apply.
func TestGlobalAuthThroughNginx(t *testing.T) {
	authURL, _ := startAuthService(t)
	down := "http://127.0.0.1:" + strconv.Itoa(harness.FreePort(t)) + "/check"
	ing := func(name string, a map[string]string, paths ...harness.Path) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[authPrefix+k] = v
		}
		if len(paths) == 0 {
			paths = []harness.Path{{Path: "/", Type: "Prefix", Service: "echo-a"}}
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, paths...)
	}
	settings := map[string]string{"global-auth-url": authURL + "/check", "global-auth-response-headers": "X-Auth-User",
		"no-auth-locations": "/.well-known/acme-challenge, /healthz"}
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(settings))
	e.write("ingresses.yaml", strings.Join([]string{
		ing("app", nil, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}, harness.Path{Path: "/healthz", Type: "Exact", Service: "echo-a"}),
		ing("public", map[string]string{"enable-global-auth": "false"}),
		ing("own", map[string]string{"auth-url": down}),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.eventually("app.example.com", "/", "global auth to ask for credentials", status(401))
	r := e.eventuallyWithHeaders("app.example.com", "/", map[string]string{"Authorization": "ok"}, "global auth to let a good client in", servedBy("a-1"))
	if got := first(r.Echo.Headers, "X-Auth-User"); got != "alice" {
		t.Errorf("global-auth-response-headers: X-Auth-User %q, want alice", got)
	}
	e.eventually("app.example.com", "/healthz", "no-auth-locations to leave /healthz open", servedBy("a-1"))
	e.eventually("public.example.com", "/", `enable-global-auth: "false" to leave the Ingress open`, servedBy("a-1"))
	e.eventuallyWithHeaders("own.example.com", "/", map[string]string{"Authorization": "ok"},
		"the Ingress's own auth-url (down) to replace the global one", status(500))

	settings["global-auth-url"] = `http://auth/"; allow all; #`
	e.write("configmap.yaml", configMapYAML(settings))
	e.eventuallyWithHeaders("app.example.com", "/", map[string]string{"Authorization": "ok"}, "an unreadable global-auth-url to fail closed", status(403))
	e.eventually("public.example.com", "/", "the Ingress without global auth to stay open", servedBy("a-1"))
	e.eventually("app.example.com", "/healthz", "no-auth-locations to stay open", servedBy("a-1"))
}
