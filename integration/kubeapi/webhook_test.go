package kubeapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"switchyard.dev/switchyard/integration/harness"
)

// warningRecorder keeps the warnings the API server returns, as kubectl
// prints them.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.seen
	w.seen = nil
	return seen
}

// TestValidatingWebhook registers switchyard's webhook with the real API
// server: an Ingress run would reject is denied with the Problem as its
// reason, a degraded one is admitted with warnings, a good one is admitted,
// another class's is not judged; with the webhook down, failurePolicy
// Ignore lets Ingresses through.
func TestValidatingWebhook(t *testing.T) {
	r := newRig(t)
	// The certificate comes as the install makes it: certgen create puts
	// it in a Secret (kept when run again), the pod mounts it.
	certgen := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(harness.Binary(t), append([]string{"certgen"}, append(args, "--kubeconfig", r.cluster.Kubeconfig)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("certgen %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	certgen("create", "--secret", ns+"/switchyard-admission", "--host", "localhost")
	if out := certgen("create", "--secret", ns+"/switchyard-admission", "--host", "localhost"); !strings.Contains(out, "exists; kept") {
		t.Errorf("second certgen create: %s", out)
	}
	secret, err := r.client.CoreV1().Secrets(ns).Get(r.ctx, "switchyard-admission", metav1.GetOptions{})
	r.must(nil, err)
	if strings.Contains(certgen("create", "--secret", ns+"/switchyard-admission", "--host", "localhost"), string(secret.Data["tls.key"])) {
		t.Error("certgen printed the key")
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, data := range map[string][]byte{certFile: secret.Data["tls.crt"], keyFile: secret.Data["tls.key"]} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := strconv.Itoa(harness.FreePort(t))
	r.service("web")
	r.endpoints("web", "10.1.2.3")
	r.ingress("web", "switchyard", "web.example.com", "web")
	r.sy = harness.StartSwitchyard(t, "", "--kubeconfig", r.cluster.Kubeconfig,
		"--validating-webhook", "127.0.0.1:"+port, "--validating-webhook-certificate", certFile, "--validating-webhook-key", keyFile)

	url := "https://localhost:" + port + "/networking/v1/ingresses"
	ignore, none, timeout := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(10)
	r.must(r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(r.ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.switchyard.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}}}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}, metav1.CreateOptions{}))

	certgen("patch", "--secret", ns+"/switchyard-admission", "--webhook", "switchyard")
	hook, err := r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(r.ctx, "switchyard", metav1.GetOptions{})
	r.must(nil, err)
	if string(hook.Webhooks[0].ClientConfig.CABundle) != string(secret.Data["ca.crt"]) {
		t.Fatal("certgen patch did not set the caBundle from the Secret")
	}

	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(r.cluster.Config)
	cfg.WarningHandler = warnings
	client, err := kubernetes.NewForConfig(cfg)
	r.must(nil, err)
	ingresses := client.NetworkingV1().Ingresses(ns)
	withAnnotations := func(name, class, host string, annotations map[string]string) *networkingv1.Ingress {
		prefix := networkingv1.PathTypePrefix
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
		}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	snippet := map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;"}

	// Until the webhook has read the cluster it answers 503, which
	// failurePolicy Ignore turns into admitted; then it denies.
	var denied error
	harness.WaitFor(t, 60*time.Second, "the webhook to deny a snippet", func() error {
		_, denied = ingresses.Create(r.ctx, withAnnotations("bad", "switchyard", "bad.example.com", snippet), dryRun)
		if denied == nil {
			return os.ErrNotExist
		}
		return nil
	})
	if msg := denied.Error(); !strings.Contains(msg, "Switchyard would not serve ingress shop/bad") ||
		!strings.Contains(msg, "configuration-snippet]: AnnotationRefused") {
		t.Errorf("denial: %s", msg)
	}

	warnings.take()
	if _, err := ingresses.Create(r.ctx, withAnnotations("meh", "switchyard", "meh.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/http2-push-preload": "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("degraded Ingress denied: %v", err)
	}
	if got := warnings.take(); len(got) != 1 || !strings.Contains(got[0], "http2-push-preload]: AnnotationNotSupported") {
		t.Errorf("warnings for the degraded Ingress: %q", got)
	}

	// The live state counts: the same host and path as the served
	// Ingress "web" goes to "web", the older one, and the newcomer is told.
	// Creation times have whole seconds: the newcomer is made in a later
	// second, so its age decides, not the tie rule (TestSameSecondTieGoesAsInIngressNginx).
	web, err := r.client.NetworkingV1().Ingresses(ns).Get(r.ctx, "web", metav1.GetOptions{})
	r.must(nil, err)
	time.Sleep(time.Until(web.CreationTimestamp.Add(1100 * time.Millisecond)))
	if _, err := ingresses.Create(r.ctx, withAnnotations("dup", "switchyard", "web.example.com", nil), dryRun); err != nil {
		t.Fatalf("duplicate path denied: %v", err)
	}
	if got := warnings.take(); len(got) != 1 || !strings.Contains(got[0], "PathConflict") || !strings.Contains(got[0], "older Ingress shop/web") {
		t.Errorf("warnings for a path another Ingress serves: %q", got)
	}

	if _, err := ingresses.Create(r.ctx, withAnnotations("good", "switchyard", "good.example.com", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("good Ingress denied: %v", err)
	}
	if _, err := ingresses.Create(r.ctx, withAnnotations("theirs", "other", "theirs.example.com", snippet), metav1.CreateOptions{}); err != nil {
		t.Fatalf("another class's Ingress denied: %v", err)
	}
	if got := warnings.take(); len(got) != 0 {
		t.Errorf("warnings for a good Ingress and another class's: %q", got)
	}

	r.sy.Stop(5 * time.Second)
	if _, err := ingresses.Create(r.ctx, withAnnotations("while-down", "switchyard", "down.example.com", snippet), metav1.CreateOptions{}); err != nil {
		t.Fatalf("webhook down with failurePolicy Ignore blocked a create: %v", err)
	}
}
