package kubeapi

import (
	"encoding/json"
	"errors"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/integration/harness"
)

// TestCheckALiveClusterReadOnly runs switchyard check against the API
// server as a user that may only read: the Ingresses of ingress-nginx's
// class get their verdicts, another class's are left out, and nothing is
// written (the user could not).
func TestCheckALiveClusterReadOnly(t *testing.T) {
	r := newRig(t)
	r.must(r.client.NetworkingV1().IngressClasses().Create(r.ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec:       networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"},
	}, metav1.CreateOptions{}))
	r.service("web")
	r.endpoints("web", "10.1.2.3")
	r.ingress("plain", "nginx", "plain.example.com", "web")
	r.ingress("mine", "switchyard", "mine.example.com", "web")
	r.ingress("cors", "nginx", "cors.example.com", "web")
	annotate := func(name string, annotations map[string]string) {
		ing, err := r.client.NetworkingV1().Ingresses(r.ns).Get(r.ctx, name, metav1.GetOptions{})
		r.must(nil, err)
		ing.Annotations = annotations
		r.must(r.client.NetworkingV1().Ingresses(r.ns).Update(r.ctx, ing, metav1.UpdateOptions{}))
	}
	annotate("cors", map[string]string{"nginx.ingress.kubernetes.io/server-snippet": "return 200;"})
	r.namespace("ingress-nginx", nil)
	r.must(r.client.CoreV1().ConfigMaps("ingress-nginx").Create(r.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx-controller"},
		Data:       map[string]string{"proxy-body-size": "20m", "allow-snippet-annotations": "true"},
	}, metav1.CreateOptions{}))

	kubeconfig, _ := r.cluster.User(t, "auditor", "auditors")
	r.must(r.client.RbacV1().ClusterRoles().Create(r.ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard-check"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services", "secrets", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		},
	}, metav1.CreateOptions{}))
	r.must(r.client.RbacV1().ClusterRoleBindings().Create(r.ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard-check"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "switchyard-check"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "auditors"}},
	}, metav1.CreateOptions{}))

	out, err := exec.Command(harness.Binary(t), "check", "--kubeconfig", kubeconfig,
		"--configmap", "ingress-nginx/ingress-nginx-controller", "-o", "json").Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("check with a rejected Ingress: %v, want exit status 1\n%s", err, out)
	}
	var got struct {
		Ingresses []struct{ Namespace, Name, Verdict string }
		ConfigMap struct {
			Keys []struct{ Key, Verdict, Reason string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, ing := range got.Ingresses {
		verdicts[ing.Namespace+"/"+ing.Name] = ing.Verdict
	}
	want := map[string]string{ns + "/plain": "served as asked", ns + "/cors": "rejected"}
	if len(verdicts) != len(want) || verdicts[ns+"/plain"] != want[ns+"/plain"] || verdicts[ns+"/cors"] != want[ns+"/cors"] {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	keys := map[string]string{}
	for _, k := range got.ConfigMap.Keys {
		keys[k.Key] = k.Verdict
	}
	if keys["proxy-body-size"] != "implemented" || keys["allow-snippet-annotations"] != "not as asked" {
		t.Errorf("ConfigMap keys %v", keys)
	}
	plain, err := r.client.NetworkingV1().Ingresses(r.ns).Get(r.ctx, "plain", metav1.GetOptions{})
	r.must(nil, err)
	if len(plain.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("check wrote a status: %+v", plain.Status.LoadBalancer)
	}
}
