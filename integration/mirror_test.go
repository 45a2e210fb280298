package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// mirrored is one request the mirror backend received.
type mirrored struct {
	uri, host string
	bodyBytes int
}

// startMirrorBackend is a real HTTP server on loopback that records what
// it receives, standing where a mirror-target points.
func startMirrorBackend(t *testing.T) (addr string, received func() []mirrored) {
	t.Helper()
	var mu sync.Mutex
	var got []mirrored
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, mirrored{uri: r.RequestURI, host: r.Host, bodyBytes: len(body)})
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot) // dropped by NGINX
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String(), func() []mirrored {
		mu.Lock()
		defer mu.Unlock()
		return append([]mirrored(nil), got...)
	}
}

// TestMirrorThroughNginx: mirror-target through the real binary, plugins,
// NGINX and backends. The client's answer comes from its backend; a copy
// of the request, with its URI ($request_uri), reaches the mirror with
// the target's host, with the body or without it (mirror-request-body:
// off), and mirror-host replaces the Host.
func TestMirrorThroughNginx(t *testing.T) {
	mirrorAddr, received := startMirrorBackend(t)
	ing := func(name string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[authPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	e := newEnv(t, map[string]string{"ingresses.yaml": strings.Join([]string{
		ing("copied", map[string]string{"mirror-target": "http://" + mirrorAddr + "$request_uri"}),
		ing("headers-only", map[string]string{"mirror-target": "http://" + mirrorAddr + "$request_uri",
			"mirror-request-body": "off", "mirror-host": "shadow.example.com"}),
	}, "---\n")})
	e.eventually("copied.example.com", "/", "the mirrored Ingress", servedBy("a-1"))
	e.eventually("headers-only.example.com", "/", "the mirrored Ingress without bodies", servedBy("a-1"))

	body := []byte(strings.Repeat("x", 1000))
	for _, host := range []string{"copied", "headers-only"} {
		r, err := e.send(http.MethodPost, host+".example.com", "/upload?id="+host, nil, body)
		if err != nil || r.Echo == nil || r.Echo.BodyBytes != int64(len(body)) {
			t.Fatalf("%s: the client's answer is not its backend's: %d %v", host, r.Status, err)
		}
	}
	want := map[string]mirrored{
		"/upload?id=copied":       {uri: "/upload?id=copied", host: mirrorAddr[:strings.IndexByte(mirrorAddr, ':')], bodyBytes: len(body)},
		"/upload?id=headers-only": {uri: "/upload?id=headers-only", host: "shadow.example.com", bodyBytes: 0},
	}
	harness.WaitFor(t, changeTimeout, "both copies at the mirror", func() error {
		seen := map[string]mirrored{}
		for _, m := range received() {
			seen[m.uri] = m
		}
		for uri, w := range want {
			if got, ok := seen[uri]; !ok || got != w {
				return fmt.Errorf("mirror received %+v for %s, want %+v (all: %+v)", got, uri, w, received())
			}
		}
		return nil
	})
}
