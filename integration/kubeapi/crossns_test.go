package kubeapi

import (
	"encoding/base64"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/integration/harness"
)

// apr1 hash of the password "pw" (`openssl passwd -apr1 -salt abcdefgh pw`).
const apr1PW = "$apr1$abcdefgh$5VEbMkemELfbhC5ck.U.z1"

// TestCrossNamespaceBasicAuth: an Ingress of namespace shop protected by a
// basic-auth Secret of namespace vault is refused while the controller
// ConfigMap does not set allow-cross-namespace-resources, served behind
// the Secret's users once it does, follows a change of that Secret, and is
// refused again when the key is turned off.
func TestCrossNamespaceBasicAuth(t *testing.T) {
	r := newRig(t)
	r.namespace("vault", nil)
	r.namespace("switchyard-system", nil)
	r.service("web")
	r.endpoints("web", r.backend("xns-a"))
	r.ingress("plain", "switchyard", "plain.example.com", "web")
	r.authIngress("guarded", "guarded.example.com", "vault/users")
	r.htpasswdSecret("vault", "users", "alice")
	r.controllerConfig(nil)
	r.sy = harness.StartSwitchyard(t, "", "--kubeconfig", r.cluster.Kubeconfig, "--configmap", "switchyard-system/controller")
	r.servedBy("plain.example.com", "xns-a")

	refused := func(t *testing.T) {
		t.Helper()
		r.eventReason(t, "guarded", "AnnotationRefused")
		r.statusOf(t, "guarded.example.com", nil, 404)
	}
	t.Run("refused without the key", refused)

	t.Run("served with the key", func(t *testing.T) {
		r.controllerConfig(map[string]string{"allow-cross-namespace-resources": "true"})
		r.statusOf(t, "guarded.example.com", basicAuth("alice", "pw"), 200)
		r.statusOf(t, "guarded.example.com", nil, 401)
		r.statusOf(t, "guarded.example.com", basicAuth("alice", "wrong"), 401)
	})

	t.Run("a change of the Secret reaches NGINX", func(t *testing.T) {
		r.htpasswdSecret("vault", "users", "bob")
		r.statusOf(t, "guarded.example.com", basicAuth("bob", "pw"), 200)
		r.statusOf(t, "guarded.example.com", basicAuth("alice", "pw"), 401)
	})

	t.Run("refused again when the key is turned off", func(t *testing.T) {
		r.controllerConfig(map[string]string{"allow-cross-namespace-resources": "false"})
		r.statusOf(t, "guarded.example.com", basicAuth("bob", "pw"), 404)
		r.servedBy("plain.example.com", "xns-a")
	})
}

func basicAuth(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

// statusOf waits until host answers status to a GET of / with headers.
func (r *rig) statusOf(t *testing.T, host string, headers map[string]string, status int) {
	t.Helper()
	harness.WaitFor(t, changeWithin, fmt.Sprintf("%s answering %d", host, status), func() error {
		resp, err := harness.DoWithHeaders(harness.NewClient(), "GET", "http://"+r.sy.HTTPAddr+"/", host, headers)
		if err == nil && resp.Status != status {
			err = fmt.Errorf("status %d", resp.Status)
		}
		return err
	})
}

// authIngress is an Ingress of r.ns for host with basic auth from secret.
func (r *rig) authIngress(name, host, secret string) {
	prefix := networkingv1.PathTypePrefix
	r.must(r.client.NetworkingV1().Ingresses(r.ns).Create(r.ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": secret}},
		Spec: networkingv1.IngressSpec{IngressClassName: strPtr("switchyard"), Rules: []networkingv1.IngressRule{{Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
	}, metav1.CreateOptions{}))
}

// htpasswdSecret creates or replaces a basic-auth Secret whose one user
// has the password "pw".
func (r *rig) htpasswdSecret(namespace, name, user string) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"auth": []byte(user + ":" + apr1PW + "\n")}}
	secrets := r.client.CoreV1().Secrets(namespace)
	if old, err := secrets.Get(r.ctx, name, metav1.GetOptions{}); err == nil {
		secret.ResourceVersion = old.ResourceVersion
		r.must(secrets.Update(r.ctx, secret, metav1.UpdateOptions{}))
		return
	}
	r.must(secrets.Create(r.ctx, secret, metav1.CreateOptions{}))
}

// controllerConfig creates or replaces the controller ConfigMap,
// switchyard-system/controller.
func (r *rig) controllerConfig(data map[string]string) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "switchyard-system", Name: "controller"}, Data: data}
	maps := r.client.CoreV1().ConfigMaps("switchyard-system")
	if old, err := maps.Get(r.ctx, cm.Name, metav1.GetOptions{}); err == nil {
		cm.ResourceVersion = old.ResourceVersion
		r.must(maps.Update(r.ctx, cm, metav1.UpdateOptions{}))
		return
	}
	r.must(maps.Create(r.ctx, cm, metav1.CreateOptions{}))
}
