package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchWebhook measures the validating webhook with scaleN Ingresses
// (each with its own host, Service and EndpointSlice) in the API server:
// how long until it judges, one review sent to it directly, and a dry-run
// create through the API server with the webhook registered against the
// same without it, side by side (ingress-nginx users report 19 s per
// Ingress at 269 Ingresses, as its webhook renders and tests the whole
// configuration each time). The watcher and the webhook run as their own
// stages on a NATS server, without NGINX, so nothing else loads the machine.
func TestBenchWebhook(t *testing.T) {
	requireBench(t)
	n := scaleN(t)
	bin := harness.Binary(t)
	cluster, client, _ := apiCluster(t)
	if err := apiLoad(t.Context(), client, n, "10.1.2.3"); err != nil {
		t.Fatalf("loading %d Ingresses: %v", n, err)
	}

	dir := t.TempDir()
	certPEM, keyPEM := harness.SelfSigned(t, "localhost")
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	nats := harness.StartNATS(t)
	common := []string{"--nats", nats.ClientURL(), "--nats-keys", nats.Keys, "--kubeconfig", cluster.Kubeconfig, "--state-dir", harness.StateDir(t), "--log-level", "warn"}
	begin := time.Now()
	harness.Start(t, bin, append([]string{"stage", "watcher"}, common...)...)
	harness.Start(t, bin, append([]string{"stage", "webhook", "--validating-webhook", addr,
		"--validating-webhook-certificate", certFile, "--validating-webhook-key", keyFile}, common...)...)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	direct := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	url := "https://" + addr + "/networking/v1/ingresses"
	review := func(i int, annotations map[string]string) (int, *admissionv1.AdmissionResponse, error) {
		ing := apiIngress(fmt.Sprintf("new-%d", i), fmt.Sprintf("new-%d.bench.test", i), scaleService(i%n))
		ing.Annotations = annotations
		raw, _ := json.Marshal(ing)
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "bench", Namespace: apiNS, Operation: admissionv1.Create,
				Resource: metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
				Object:   runtime.RawExtension{Raw: raw}},
		})
		resp, err := direct.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var got admissionv1.AdmissionReview
		if resp.StatusCode == 200 {
			err = json.NewDecoder(resp.Body).Decode(&got)
		}
		return resp.StatusCode, got.Response, err
	}
	harness.WaitFor(t, 10*time.Minute, "the webhook to judge", func() error {
		code, _, err := review(0, nil)
		if err == nil && code != 200 {
			err = fmt.Errorf("status %d", code)
		}
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
		return err
	})
	ready := time.Since(begin)

	const reviews = 50
	snippet := map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;"}
	directOK, directDenied := series{name: "admitted"}, series{name: "denied"}
	for i := range reviews {
		for _, c := range []struct {
			s           *series
			annotations map[string]string
			allowed     bool
		}{{&directOK, nil, true}, {&directDenied, snippet, false}} {
			start := time.Now()
			code, resp, err := review(i+1, c.annotations)
			if err != nil || code != 200 || resp == nil || resp.Allowed != c.allowed {
				t.Fatalf("review %d: %v %d %+v", i, err, code, resp)
			}
			c.s.samples = append(c.s.samples, time.Since(start))
		}
	}

	ingresses := client.NetworkingV1().Ingresses(apiNS)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	throughAPI := func(name string) series {
		s := series{name: name}
		for i := range reviews {
			start := time.Now()
			if _, err := ingresses.Create(t.Context(), apiIngress(fmt.Sprintf("dry-%d", i), fmt.Sprintf("dry-%d.bench.test", i), scaleService(i%n)), dryRun); err != nil {
				t.Fatalf("dry-run create %d: %v", i, err)
			}
			s.samples = append(s.samples, time.Since(start))
		}
		return s
	}
	without := throughAPI("without webhook")
	hookURL, fail, none := url, admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	hookURL = strings.Replace(hookURL, "127.0.0.1", "localhost", 1)
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.switchyard.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &hookURL, CABundle: certPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the API server picks the configuration up from its informer
	with := throughAPI("with webhook")

	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\nwebhook: %d Ingresses in the API server (watcher and webhook stages on NATS, no NGINX)\n", strings.Repeat("=", 100), n)
	fmt.Fprintf(&b, "  start to first judged review:  %s\n", ready.Round(100*time.Millisecond))
	for _, s := range []series{directOK, directDenied, without, with} {
		fmt.Fprintf(&b, "  %-30s p50 %-10s p99 %s\n", s.name+":", s.quantile(0.5).Round(10*time.Microsecond), s.quantile(0.99).Round(10*time.Microsecond))
	}
	fmt.Fprintf(&b, "  dry-run create with/without webhook, p50 ratio: %.2f (ingress-nginx users report 19 s per Ingress at 269)\n",
		float64(with.quantile(0.5))/float64(without.quantile(0.5)))
	t.Log(b.String())
}
