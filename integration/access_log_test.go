package integration

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestAccessLogKeysThroughNginx: the http block's access log goes to
// http-access-log-path (before access-log-path); the catch-all's own
// default location is not logged until enable-access-log-for-default-backend,
// while the Ingress's host (Lua-routed through the catch-all server, or a
// server block of its own) always is; disable-http-access-log stops the log.
func TestAccessLogKeysThroughNginx(t *testing.T) {
	e := newBackends(t)
	logDir := writableLogDir(t)
	httpLog, otherLog := filepath.Join(logDir, "http.log"), filepath.Join(logDir, "other.log")
	settings := map[string]string{"http-access-log-path": httpLog, "access-log-path": otherLog}
	e.write("ing.yaml", annotatedIngressYAML("logged", nil))
	e.write("config.yaml", configMapYAML(settings))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.eventually("logged.example.com", "/", "the Ingress served", servedBy("a-1"))

	// One keep-alive connection: one worker takes both requests in turn, so
	// the first is logged (or not) before the second's line appears.
	client := &http.Client{Timeout: 10 * time.Second}
	round := 0
	defaultThenMark := func() (dflt, mark string, err error) {
		round++
		dflt, mark = fmt.Sprintf("/default-%d", round), fmt.Sprintf("/mark-%d", round)
		if r, err := harness.DoWithHeaders(client, http.MethodGet, "http://"+e.sy.HTTPAddr+dflt, "nobody.example.com", nil); err != nil || r.Status != 404 {
			return dflt, mark, fmt.Errorf("the default backend answered %d, %v", r.Status, err)
		}
		if r, err := harness.DoWithHeaders(client, http.MethodGet, "http://"+e.sy.HTTPAddr+mark, "logged.example.com", nil); err != nil || !servedBy("a-1")(r) {
			return dflt, mark, fmt.Errorf("the Ingress answered %d, %v", r.Status, err)
		}
		return dflt, mark, nil
	}
	logged := func(path, uri string) bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), "GET "+uri+" HTTP")
	}

	harness.WaitFor(t, changeTimeout, "the Ingress's request logged, the default backend's not", func() error {
		dflt, mark, err := defaultThenMark()
		if err != nil {
			return err
		}
		if !logged(httpLog, mark) {
			return fmt.Errorf("%s not in http-access-log-path's file", mark)
		}
		if logged(httpLog, dflt) {
			t.Fatalf("%s answered by the default backend was logged", dflt)
		}
		return nil
	})
	if data, _ := os.ReadFile(otherLog); strings.Contains(string(data), "GET /mark-") {
		t.Errorf("access-log-path's file got the http log: %s", truncate(data))
	}

	settings["enable-access-log-for-default-backend"] = "true"
	e.write("config.yaml", configMapYAML(settings))
	harness.WaitFor(t, changeTimeout, "the default backend's request logged", func() error {
		dflt, _, err := defaultThenMark()
		if err != nil {
			return err
		}
		if !logged(httpLog, dflt) {
			return fmt.Errorf("%s not logged yet", dflt)
		}
		return nil
	})

	// access-log-params' if= and skip-access-log-urls both apply, with a
	// buffer flushed every second.
	settings["access-log-params"] = "buffer=4k flush=1s if=$http_x_log"
	settings["skip-access-log-urls"] = "/skipped"
	e.write("config.yaml", configMapYAML(settings))
	withHeader := map[string]string{"X-Log": "1"}
	get := func(uri string, headers map[string]string) error {
		r, err := harness.DoWithHeaders(client, http.MethodGet, "http://"+e.sy.HTTPAddr+uri, "logged.example.com", headers)
		if err != nil || !servedBy("a-1")(r) {
			return fmt.Errorf("%s answered %d, %v", uri, r.Status, err)
		}
		return nil
	}
	// A round's lines reach the file when the buffer is flushed: a round
	// waits for its mark a few seconds before the next one starts.
	var quiet, mark string
	var before []byte
	var sent time.Time
	harness.WaitFor(t, changeTimeout, "only requests with X-Log outside /skipped logged", func() error {
		if mark == "" || time.Since(sent) > 5*time.Second {
			round++
			quiet, mark = fmt.Sprintf("/quiet-%d", round), fmt.Sprintf("/mark-%d", round)
			before, _ = os.ReadFile(httpLog)
			sent = time.Now()
			for _, req := range []struct {
				uri     string
				headers map[string]string
			}{{quiet, nil}, {"/skipped", withHeader}, {mark, withHeader}} {
				if err := get(req.uri, req.headers); err != nil {
					return err
				}
			}
		}
		if !logged(httpLog, mark) {
			return fmt.Errorf("%s not logged yet", mark)
		}
		after, _ := os.ReadFile(httpLog)
		if logged(httpLog, quiet) || strings.Count(string(after), "GET /skipped ") != strings.Count(string(before), "GET /skipped ") {
			return fmt.Errorf("%s or /skipped logged", quiet)
		}
		return nil
	})

	settings["disable-http-access-log"] = "true"
	e.write("config.yaml", configMapYAML(settings))
	harness.WaitFor(t, changeTimeout, "the http log off", func() error {
		before, _ := os.ReadFile(httpLog)
		if _, _, err := defaultThenMark(); err != nil {
			return err
		}
		after, _ := os.ReadFile(httpLog)
		if len(after) != len(before) {
			return errors.New("a request was still logged")
		}
		return nil
	})
}

// TestOriginalURIHeaderThroughNginx: the backend gets X-Original-URI (the
// client's request URI) only with proxy-add-original-uri-header, as in
// ingress-nginx.
func TestOriginalURIHeaderThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("orig", nil))
	e.write("config.yaml", configMapYAML(map[string]string{}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	const uri = "/some/path?q=1&r=%20"
	originalURI := func(want string) func(harness.Response) bool {
		return func(r harness.Response) bool {
			if !servedBy("a-1")(r) {
				return false
			}
			got := r.Echo.Headers["X-Original-Uri"]
			return (want == "" && len(got) == 0) || (len(got) == 1 && got[0] == want)
		}
	}
	e.eventually("orig.example.com", uri, "no X-Original-URI by default", originalURI(""))

	e.write("config.yaml", configMapYAML(map[string]string{"proxy-add-original-uri-header": "true"}))
	e.eventually("orig.example.com", uri, "X-Original-URI with the key", originalURI(uri))
}

// TestAuthAccessLogThroughNginx: the external auth subrequest is not
// logged, as in ingress-nginx, until enable-auth-access-log; the request
// itself always is.
func TestAuthAccessLogThroughNginx(t *testing.T) {
	authURL, _ := startAuthService(t)
	e := newBackends(t)
	logFile := filepath.Join(writableLogDir(t), "http.log")
	settings := map[string]string{"access-log-path": logFile, "log-format-upstream": "line $uri $request_uri $status"}
	e.write("ing.yaml", annotatedIngressYAML("authed", map[string]string{ann + "auth-url": authURL + "/check"}))
	e.write("config.yaml", configMapYAML(settings))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	ok := map[string]string{"Authorization": "ok"}
	e.eventuallyWithHeaders("authed.example.com", "/", ok, "the authorized request served", servedBy("a-1"))

	round := 0
	// authLogged sends one authorized request and reports whether its main
	// line is in the log yet and whether its auth subrequest's is: the
	// subrequest ends, and is logged, before the request does.
	authLogged := func() (main, sub bool, err error) {
		round++
		uri := fmt.Sprintf("/authed-%d", round)
		if r, err := e.tryWith("authed.example.com", uri, ok); err != nil || !servedBy("a-1")(r) {
			return false, false, fmt.Errorf("%s answered %d, %v", uri, r.Status, err)
		}
		data, _ := os.ReadFile(logFile)
		return strings.Contains(string(data), "line "+uri+" "+uri+" 200"),
			strings.Contains(string(data), "/_switchyard_external_auth_0 "+uri+" 200"), nil
	}
	harness.WaitFor(t, changeTimeout, "the request logged without its auth subrequest", func() error {
		main, sub, err := authLogged()
		switch {
		case err != nil:
			return err
		case !main:
			return errors.New("the request is not logged yet")
		case sub:
			t.Fatal("the auth subrequest was logged without enable-auth-access-log")
		}
		return nil
	})

	settings["enable-auth-access-log"] = "true"
	e.write("config.yaml", configMapYAML(settings))
	harness.WaitFor(t, changeTimeout, "the auth subrequest logged", func() error {
		main, sub, err := authLogged()
		if err != nil {
			return err
		}
		if !main || !sub {
			return fmt.Errorf("request logged %v, auth subrequest logged %v", main, sub)
		}
		return nil
	})
}

// writableLogDir is a directory for NGINX's log files: its workers may run
// as another user, so the files must be theirs to write.
func writableLogDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAccessLogParamsNginxRefuses: an if= variable NGINX does not know
// passes the settings parser; NGINX's refusal (of the skip map's default it
// becomes) is traced to access-log-params, which falls back to none, and
// every host is served.
func TestAccessLogParamsNginxRefuses(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("logged", nil))
	e.write("config.yaml", configMapYAML(map[string]string{
		"access-log-params": "buffer=8k if=$no_such_var", "skip-access-log-urls": "/healthz"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	e.eventually("logged.example.com", "/", "the Ingress served", servedBy("a-1"))
	waitRefusalLogged(t, e.sy, "configmap access-log-params", `unknown "no_such_var" variable`)
	live, err := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(live), "# refused configmap access-log-params rev=") || strings.Contains(string(live), "no_such_var") ||
		strings.Contains(string(live), "buffer=8k") {
		t.Errorf("the running nginx.conf still has access-log-params, or no refusal line")
	}
}

// TestErrorLogPathThroughNginx: with error-log-path, NGINX's errors (a
// backend that refuses connections) reach that file and still the
// controller's log, which the applier reads.
func TestErrorLogPathThroughNginx(t *testing.T) {
	e := newBackends(t)
	errorLog := filepath.Join(writableLogDir(t), "error.log")
	e.write("dead.yaml", harness.ServiceYAML("default", "dead", harness.FreePort(t))+"---\n"+
		harness.AnnotatedIngressYAML("default", "dead", "dead.example.com", nil, harness.Path{Path: "/", Type: "Prefix", Service: "dead"}))
	e.write("config.yaml", configMapYAML(map[string]string{"error-log-path": errorLog}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	harness.WaitFor(t, changeTimeout, "the refused connection in error-log-path's file and the controller's log", func() error {
		if r := e.getWith("dead.example.com", "/", nil); r.Status != 502 {
			return fmt.Errorf("status %d, want 502", r.Status)
		}
		data, err := os.ReadFile(errorLog)
		if err != nil || !strings.Contains(string(data), "connect() failed") {
			return fmt.Errorf("%s: %v %q", errorLog, err, data)
		}
		// NGINX's stderr reaches the controller's log through a pipe the
		// applier reads: moments later.
		if !strings.Contains(e.sy.Output.String(), "connect() failed") {
			return errors.New("not in the controller's log")
		}
		return nil
	})
}
