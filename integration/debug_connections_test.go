package integration

import (
	"fmt"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestDebugConnectionsThroughNginx: debug-connections makes NGINX log the
// connections of the clients it lists at debug level (into the
// controller's log) while error-log-level stays at its default; a client
// not on the list is not.
func TestDebugConnectionsThroughNginx(t *testing.T) {
	e := startWithConfigMap(t, map[string]string{"ing.yaml": annotatedIngressYAML("dbg", nil)},
		map[string]string{"debug-connections": "10.9.9.9"})
	e.eventually("dbg.example.com", "/", "the Ingress", servedBy("a-1"))
	if r, err := e.tryWith("dbg.example.com", "/debug-probe-other-client", nil); err != nil || r.Status != 200 {
		t.Fatalf("%v %d", err, r.Status)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"debug-connections": "127.0.0.0/8, ::1"}))
	harness.WaitFor(t, changeTimeout, "a debug log line of a loopback request", func() error {
		if r, err := e.tryWith("dbg.example.com", "/debug-probe-listed", nil); err != nil || r.Status != 200 {
			return fmt.Errorf("%v %d", err, r.Status)
		}
		if !debugLogged(e.sy.Output.String(), "/debug-probe-listed") {
			return fmt.Errorf("not logged at debug level")
		}
		return nil
	})
	if debugLogged(e.sy.Output.String(), "/debug-probe-other-client") {
		t.Error("a client outside debug-connections was logged at debug level")
	}
}

// debugLogged says whether NGINX's debug log has the request line of a
// request for path ("http request line", logged at no other level).
func debugLogged(output, path string) bool {
	for line := range strings.SplitSeq(output, "\n") {
		if strings.Contains(line, "[debug]") && strings.Contains(line, "http request line") && strings.Contains(line, path) {
			return true
		}
	}
	return false
}
