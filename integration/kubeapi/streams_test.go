package kubeapi

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/integration/harness"
)

// TestTCPServicesThroughTheAPI: a tcp-services ConfigMap in another
// namespace than --watch-namespace, read from the real API server, proxies
// a port to the Service's endpoints, and follows an EndpointSlice change.
func TestTCPServicesThroughTheAPI(t *testing.T) {
	r := newRig(t)
	podA := r.backend("web-a")
	r.service("web")
	r.endpoints("web", podA)
	r.namespace("switchyard-system", nil)
	port := harness.FreePort(t)
	r.must(r.client.CoreV1().ConfigMaps("switchyard-system").Create(r.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tcp-services"},
		Data:       map[string]string{fmt.Sprint(port): ns + "/web:http"},
	}, metav1.CreateOptions{}))
	r.sy = harness.StartSwitchyard(t, "", "--kubeconfig", r.cluster.Kubeconfig, "--watch-namespace", ns,
		"--tcp-services-configmap", "switchyard-system/tcp-services")

	servedOverTCP := func(pod string) {
		t.Helper()
		harness.WaitFor(t, changeWithin, "port "+fmt.Sprint(port)+" served by "+pod, func() error {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: tcp.example.com\r\n\r\n"); err != nil {
				return err
			}
			body, err := io.ReadAll(c)
			if err == nil && !strings.Contains(string(body), `"`+pod+`"`) {
				err = fmt.Errorf("answer %.200q", body)
			}
			return err
		})
	}
	servedOverTCP("web-a")
	r.endpoints("web", r.backend("web-b"))
	servedOverTCP("web-b")
}
