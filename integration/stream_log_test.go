package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestStreamAccessLogThroughNginx: a TCP service's connections are logged
// in log-format-stream to stream-access-log-path, and
// disable-stream-access-log stops it.
func TestStreamAccessLogThroughNginx(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	a := startTCPEcho(t, "a", false)
	port := harness.FreePort(t)
	logFile := filepath.Join(writableLogDir(t), "stream.log")
	settings := map[string]string{
		"log-format-stream":      "tcp-log $protocol $status $bytes_received $upstream_addr",
		"stream-access-log-path": logFile,
	}
	e.write("services.yaml", streamServiceYAML("svc-a", "TCP", a))
	e.write("tcp.yaml", defaultConfigMapYAML("tcp", map[string]string{fmt.Sprint(port): "default/svc-a:7000"}))
	e.write("config.yaml", configMapYAML(settings))
	e.sy = harness.StartSwitchyard(t, e.dir, "--tcp-services-configmap", "default/tcp", "--configmap", configMapName)

	want := fmt.Sprintf("tcp-log TCP 200 6 127.0.0.1:%d", a)
	harness.WaitFor(t, changeTimeout, "a logged TCP connection", func() error {
		got, err := tcpOnce(port, nil, "hello")
		if err := expectReply(got, err, "a hello"); err != nil {
			return err
		}
		data, _ := os.ReadFile(logFile)
		if !strings.Contains(string(data), want) {
			return fmt.Errorf("the log holds %q, want a line %q", data, want)
		}
		return nil
	})

	settings["disable-stream-access-log"] = "true"
	e.write("config.yaml", configMapYAML(settings))
	harness.WaitFor(t, changeTimeout, "the stream log off", func() error {
		before, _ := os.ReadFile(logFile)
		got, err := tcpOnce(port, nil, "quiet")
		if err := expectReply(got, err, "a quiet"); err != nil {
			return err
		}
		// The line is written when the connection closes: poll a moment.
		after, _ := os.ReadFile(logFile)
		if len(after) != len(before) {
			return errors.New("a connection was still logged")
		}
		return nil
	})
}
