package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// syslogListener is a syslog server on loopback: a UDP socket whose
// datagrams the test reads.
type syslogListener struct {
	conn net.PacketConn
	port int
	seen []string // every datagram read so far
}

func startSyslog(t *testing.T) *syslogListener {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &syslogListener{conn: conn, port: conn.LocalAddr().(*net.UDPAddr).Port}
}

// find reads datagrams for up to wait and returns the first holding want.
func (l *syslogListener) find(want string, wait time.Duration) (string, error) {
	buf := make([]byte, 65536)
	deadline := time.Now().Add(wait)
	for {
		if err := l.conn.SetReadDeadline(deadline); err != nil {
			return "", err
		}
		n, _, err := l.conn.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return "", fmt.Errorf("no datagram with %q", want)
			}
			return "", err
		}
		msg := string(buf[:n])
		l.seen = append(l.seen, msg)
		if strings.Contains(msg, want) {
			return msg, nil
		}
	}
}

// accessLogged is what an access log line in the default format holds of a
// GET of path; an error log line quotes the request differently
// (request: "GET ...").
func accessLogged(path string) string { return `] "GET ` + path + ` HTTP/1.1" ` }

// TestSyslogThroughNginx: with enable-syslog, a request's access log line
// reaches a syslog server over UDP (syslog-host, syslog-port), and so do
// the http block's errors (a request to a backend that refuses the
// connection); a request to a skip-access-log-urls URI is not sent.
func TestSyslogThroughNginx(t *testing.T) {
	syslog := startSyslog(t)
	// "refused" has one endpoint, a port nothing listens on: NGINX logs
	// the failed connect at error level.
	e := startWithConfigMap(t, map[string]string{
		"ing.yaml":         annotatedIngressYAML("logged", nil),
		"refused.yaml":     harness.ServiceYAML("default", "refused", harness.FreePort(t)),
		"refused-ing.yaml": proxyIngress("refused", "refused.example.com", "refused", nil),
	}, map[string]string{"enable-syslog": "true", "syslog-host": "127.0.0.1",
		"syslog-port": strconv.Itoa(syslog.port), "skip-access-log-urls": "/skipped"})

	var line string
	harness.WaitFor(t, changeTimeout, "the access log line on the syslog server", func() error {
		if r, err := e.tryWith("logged.example.com", "/skipped", nil); err != nil || r.Status != 200 {
			return fmt.Errorf("skipped URI: %v %d", err, r.Status)
		}
		if r, err := e.tryWith("logged.example.com", "/syslog-probe", nil); err != nil || r.Status != 200 {
			return fmt.Errorf("probe: %v %d", err, r.Status)
		}
		var err error
		line, err = syslog.find(accessLogged("/syslog-probe"), time.Second)
		return err
	})
	// RFC 3164 framing as NGINX writes it: <priority>, then the tag.
	if !strings.HasPrefix(line, "<") || !strings.Contains(line, "nginx:") {
		t.Errorf("syslog line %q: want NGINX's <PRI>... nginx: framing", line)
	}
	harness.WaitFor(t, changeTimeout, "the error log line on the syslog server", func() error {
		if r, err := e.tryWith("refused.example.com", "/refused-probe", nil); err != nil || r.Status != 502 {
			return fmt.Errorf("refused backend: %v %d", err, r.Status)
		}
		// The access log line names the URI too: the error's own words.
		line, err := syslog.find("connect() failed", time.Second)
		if err == nil && !strings.Contains(line, "/refused-probe") {
			err = fmt.Errorf("error line %q names another request", line)
		}
		return err
	})
	// The skipped URI was requested before the probe on every attempt;
	// read what else came, then look at every datagram.
	_, _ = syslog.find("no such line", 500*time.Millisecond)
	for _, msg := range syslog.seen {
		if strings.Contains(msg, accessLogged("/skipped")) {
			t.Errorf("a skip-access-log-urls request was sent to syslog: %q", msg)
		}
	}
}

// TestSyslogNginxRefuses: a syslog-host NGINX cannot resolve is traced to
// enable-syslog, which falls back to the logs of before; hosts stay served.
func TestSyslogNginxRefuses(t *testing.T) {
	e := startWithConfigMap(t, map[string]string{"ing.yaml": annotatedIngressYAML("logged", nil)},
		map[string]string{"enable-syslog": "true", "syslog-host": "no-such-host.invalid"})

	e.eventually("logged.example.com", "/", "the Ingress served", servedBy("a-1"))
	waitRefusalLogged(t, e.sy, "configmap enable-syslog", "host not found in syslog server")
	live, err := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(live), "# refused configmap enable-syslog rev=") || strings.Contains(string(live), "syslog:server") {
		t.Errorf("the running nginx.conf still sends to syslog, or has no refusal line")
	}
}
