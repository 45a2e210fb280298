// Package kubeapi tests Switchyard against a real kube-apiserver and etcd:
// objects written through the API are served through NGINX, to backends
// that run in network namespaces (the API server refuses loopback
// endpoint addresses).
package kubeapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/integration/kube"
)

const (
	ns           = "shop"
	statusAddr   = "192.0.2.10"
	changeWithin = 15 * time.Second
)

type rig struct {
	t       *testing.T
	ns      string
	ctx     context.Context
	cluster *kube.Cluster
	client  kubernetes.Interface
	sy      *harness.Switchyard
}

func newRig(t *testing.T) *rig {
	harness.Nginx(t)
	cluster := kube.Start(t)
	r := &rig{t: t, ns: ns, ctx: context.Background(), cluster: cluster, client: cluster.Client}
	r.namespace(ns, nil)
	r.must(r.client.NetworkingV1().IngressClasses().Create(r.ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
		Spec:       networkingv1.IngressClassSpec{Controller: "switchyard.dev/ingress-controller"},
	}, metav1.CreateOptions{}))
	return r
}

// namespace creates a namespace with labels.
func (r *rig) namespace(name string, labels map[string]string) {
	r.must(r.client.CoreV1().Namespaces().Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}))
}

func (r *rig) must(_ any, err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// backend runs an echo server in its own network namespace.
func (r *rig) backend(pod string) string {
	n := kube.NewNetns(r.t)
	n.Start(r.t, harness.Binary(r.t), "echo", "--listen", n.Addr+":8080", "--service", "web", "--pod", pod)
	harness.WaitFor(r.t, 10*time.Second, "echo in "+pod, func() error {
		_, err := harness.Do(harness.NewClient(), "GET", "http://"+n.Addr+":8080/", "x", nil)
		return err
	})
	return n.Addr
}

func (r *rig) service(name string) {
	r.must(r.client.CoreV1().Services(r.ns).Create(r.ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			ClusterIP: corev1.ClusterIPNone},
	}, metav1.CreateOptions{}))
}

func (r *rig) endpoints(service string, addrs ...string) {
	port, name, ready := int32(8080), "http", true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for _, a := range addrs {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	slices := r.client.DiscoveryV1().EndpointSlices(r.ns)
	if old, err := slices.Get(r.ctx, slice.Name, metav1.GetOptions{}); err == nil {
		slice.ResourceVersion = old.ResourceVersion
		r.must(slices.Update(r.ctx, slice, metav1.UpdateOptions{}))
		return
	}
	r.must(slices.Create(r.ctx, slice, metav1.CreateOptions{}))
}

func (r *rig) ingress(name, class, host, service string) {
	prefix := networkingv1.PathTypePrefix
	r.must(r.client.NetworkingV1().Ingresses(r.ns).Create(r.ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: service, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
	}, metav1.CreateOptions{}))
}

func (r *rig) servedBy(host, pod string) {
	r.t.Helper()
	harness.WaitFor(r.t, changeWithin, host+" served by "+pod, func() error {
		resp, err := r.sy.Get(host, "/")
		if err == nil && (resp.Echo == nil || resp.Echo.Pod != pod) {
			err = fmt.Errorf("status %d", resp.Status)
		}
		return err
	})
}

func TestServedThroughTheAPI(t *testing.T) {
	r := newRig(t)
	podA := r.backend("web-a")
	r.service("web")
	r.endpoints("web", podA)
	r.ingress("web", "switchyard", "web.example.com", "web")
	r.ingress("theirs", "other", "theirs.example.com", "web")
	r.sy = harness.StartSwitchyard(t, "", "--kubeconfig", r.cluster.Kubeconfig, "--publish-status-address", statusAddr)
	r.servedBy("web.example.com", "web-a")

	t.Run("status written for the served Ingress only", func(t *testing.T) {
		harness.WaitFor(t, changeWithin, "the status address", func() error {
			ing, err := r.client.NetworkingV1().Ingresses(r.ns).Get(r.ctx, "web", metav1.GetOptions{})
			if err == nil && (len(ing.Status.LoadBalancer.Ingress) != 1 || ing.Status.LoadBalancer.Ingress[0].IP != statusAddr) {
				err = fmt.Errorf("status %+v", ing.Status.LoadBalancer)
			}
			return err
		})
		theirs, err := r.client.NetworkingV1().Ingresses(r.ns).Get(r.ctx, "theirs", metav1.GetOptions{})
		if err != nil || len(theirs.Status.LoadBalancer.Ingress) != 0 {
			t.Fatalf("the other class's Ingress got a status: %v %+v", err, theirs.Status)
		}
		if resp, _ := r.sy.Get("theirs.example.com", "/"); resp.Status != 404 {
			t.Fatalf("the other class's Ingress is served: %d", resp.Status)
		}
	})

	t.Run("ingress-nginx's --apiserver-host overrides the kubeconfig's server", func(t *testing.T) {
		data, err := os.ReadFile(r.cluster.Kubeconfig)
		if err != nil || !strings.Contains(string(data), r.cluster.Host) {
			t.Fatalf("kubeconfig without %s: %v", r.cluster.Host, err)
		}
		// A kubeconfig whose server answers nothing: only the flag can
		// bring the controller to the cluster.
		wrong := filepath.Join(t.TempDir(), "kubeconfig")
		harness.WriteFile(t, wrong, strings.ReplaceAll(string(data), r.cluster.Host, "https://127.0.0.1:1"))
		other := harness.StartSwitchyard(t, "", "--kubeconfig", wrong, "--apiserver-host", r.cluster.Host, "--update-status=false")
		harness.WaitFor(t, changeWithin, "web.example.com served by the second controller", func() error {
			resp, err := other.Get("web.example.com", "/")
			if err == nil && (resp.Echo == nil || resp.Echo.Pod != "web-a") {
				err = fmt.Errorf("status %d", resp.Status)
			}
			return err
		})
		other.Stop(10 * time.Second)
	})

	t.Run("endpoint change without reload", func(t *testing.T) {
		podB := r.backend("web-b")
		workers := r.sy.WorkerPIDs(t)
		r.endpoints("web", podB)
		r.servedBy("web.example.com", "web-b")
		if after := r.sy.WorkerPIDs(t); !slices.Equal(sortInts(workers), sortInts(after)) {
			t.Fatalf("NGINX reloaded: %v then %v", workers, after)
		}
	})

	t.Run("missing Service answers 503 and gets an Event", func(t *testing.T) {
		r.ingress("broken", "switchyard", "broken.example.com", "nowhere")
		harness.WaitFor(t, changeWithin, "503 for the missing Service", func() error {
			resp, err := r.sy.Get("broken.example.com", "/")
			if err == nil && resp.Status != 503 {
				err = fmt.Errorf("status %d", resp.Status)
			}
			return err
		})
		harness.WaitFor(t, changeWithin, "a ServiceNotFound Event", func() error {
			events, err := r.client.CoreV1().Events(r.ns).List(r.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken"})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "ServiceNotFound" && strings.Contains(e.Message, "nowhere") {
					return nil
				}
			}
			return fmt.Errorf("events: %d", len(events.Items))
		})
		r.servedBy("web.example.com", "web-b") // nothing else is affected
	})

	t.Run("TLS Secrets: valid one served by SNI, invalid one reported", func(t *testing.T) {
		cert, key := harness.SelfSigned(t, "secure.example.com")
		r.secret("secure-tls", cert, key)
		r.secret("broken-tls", []byte("not a certificate"), []byte("not a key"))
		r.tlsIngress("secure", "secure.example.com", "secure-tls")
		r.tlsIngress("brokentls", "brokentls.example.com", "broken-tls")
		harness.WaitFor(t, changeWithin, "the Secret's certificate", func() error {
			return harness.ExpectCertificatePEM(r.sy.HTTPSAddr, "secure.example.com", cert)
		})
		r.eventReason(t, "brokentls", "InvalidCertificate")
		if err := harness.ExpectCertificate(r.sy.HTTPSAddr, "brokentls.example.com", "Switchyard Default Certificate"); err != nil {
			t.Fatal(err)
		}
		r.servedBy("web.example.com", "web-b")
	})

	t.Run("unknown port name answers 503 and gets an Event", func(t *testing.T) {
		prefix := networkingv1.PathTypePrefix
		r.must(r.client.NetworkingV1().Ingresses(r.ns).Create(r.ctx, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "badport"},
			Spec: networkingv1.IngressSpec{IngressClassName: strPtr("switchyard"), Rules: []networkingv1.IngressRule{{Host: "badport.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Name: "grpc"}}}}}}}}}},
		}, metav1.CreateOptions{}))
		harness.WaitFor(t, changeWithin, "503 for the unknown port", func() error {
			resp, err := r.sy.Get("badport.example.com", "/")
			if err == nil && resp.Status != 503 {
				err = fmt.Errorf("status %d", resp.Status)
			}
			return err
		})
		r.eventReason(t, "badport", "PortNotFound")
	})

	t.Run("API server restart: no failed request, later changes applied", func(t *testing.T) {
		var failed, sent atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				sent.Add(1)
				if resp, err := r.sy.Get("web.example.com", "/"); err != nil || resp.Status != 200 {
					failed.Add(1)
				}
			}
		}()
		r.cluster.StopAPIServer(t)
		time.Sleep(2 * time.Second)
		r.cluster.StartAPIServer(t)
		r.service("late")
		r.endpoints("late", r.backend("late-a"))
		r.ingress("late", "switchyard", "late.example.com", "late")
		r.servedBy("late.example.com", "late-a")
		close(stop)
		<-done
		if failed.Load() != 0 {
			t.Fatalf("%d of %d requests failed while the API server restarted", failed.Load(), sent.Load())
		}
	})
}

func (r *rig) secret(name string, cert, key []byte) {
	r.must(r.client.CoreV1().Secrets(r.ns).Create(r.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key},
	}, metav1.CreateOptions{}))
}

func (r *rig) tlsIngress(name, host, secret string) {
	prefix := networkingv1.PathTypePrefix
	r.must(r.client.NetworkingV1().Ingresses(r.ns).Create(r.ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{IngressClassName: strPtr("switchyard"),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: secret}},
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
	}, metav1.CreateOptions{}))
}

// eventReason waits for a Warning Event with reason on the named Ingress.
func (r *rig) eventReason(t *testing.T, ingress, reason string) {
	t.Helper()
	harness.WaitFor(t, changeWithin, "a "+reason+" Event on "+ingress, func() error {
		events, err := r.client.CoreV1().Events(r.ns).List(r.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + ingress})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("%d events, none %s", len(events.Items), reason)
	})
}

func strPtr(s string) *string { return &s }

func sortInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestNamespaceSelector serves only namespaces whose labels match
// --watch-namespace-selector, and follows a relabelled namespace.
func TestNamespaceSelector(t *testing.T) {
	r := newRig(t)
	pod := r.backend("sel-a")
	for _, name := range []string{"team-a", "team-b"} {
		r.ns = name
		if name == "team-a" {
			r.namespace(name, map[string]string{"switchyard.dev/serve": "yes"})
		} else {
			r.namespace(name, nil)
		}
		r.service("web")
		r.endpoints("web", pod)
		r.ingress("web", "switchyard", name+".example.com", "web")
	}
	r.sy = harness.StartSwitchyard(t, "", "--kubeconfig", r.cluster.Kubeconfig, "--watch-namespace-selector", "switchyard.dev/serve=yes")
	r.servedBy("team-a.example.com", "sel-a")
	if resp, err := r.sy.Get("team-b.example.com", "/"); err != nil || resp.Status != 404 {
		t.Fatalf("a namespace outside the selector is served: %v %d", err, resp.Status)
	}
	b, err := r.client.CoreV1().Namespaces().Get(r.ctx, "team-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"switchyard.dev/serve": "yes"}
	r.must(r.client.CoreV1().Namespaces().Update(r.ctx, b, metav1.UpdateOptions{}))
	r.servedBy("team-b.example.com", "sel-a")
}

// TestLeaderElection runs two replicas: one holds the Lease and writes
// status; when it stops, the other takes over. Each exports
// leader_election_status: 1 on the leader, 0 on the follower.
func TestLeaderElection(t *testing.T) {
	r := newRig(t)
	pod := r.backend("le-a")
	r.service("web")
	r.endpoints("web", pod)
	r.ingress("first", "switchyard", "first.example.com", "web")
	args := []string{"--kubeconfig", r.cluster.Kubeconfig, "--publish-status-address", statusAddr}
	metricsAddrs := []string{fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}
	replicas := []*harness.Switchyard{harness.StartSwitchyard(t, "", append(args, "--metrics-addr", metricsAddrs[0])...),
		harness.StartSwitchyard(t, "", append(args, "--metrics-addr", metricsAddrs[1])...)}
	r.waitStatus("first")

	lease, err := r.client.CoordinationV1().Leases("default").Get(r.ctx, "switchyard-leader", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("no Lease holder: %v", err)
	}
	leader, follower := replicas[0], replicas[1]
	leaderMetrics, followerMetrics := metricsAddrs[0], metricsAddrs[1]
	if !strings.HasSuffix(*lease.Spec.HolderIdentity, fmt.Sprintf("-%d", leader.Cmd.Process.Pid)) {
		leader, follower = follower, leader
		leaderMetrics, followerMetrics = followerMetrics, leaderMetrics
	}
	waitLeaderStatus(t, leaderMetrics, 1)
	waitLeaderStatus(t, followerMetrics, 0)
	if !strings.HasSuffix(*lease.Spec.HolderIdentity, fmt.Sprintf("-%d", leader.Cmd.Process.Pid)) {
		t.Fatalf("Lease holder %q is neither replica", *lease.Spec.HolderIdentity)
	}
	leader.Stop(30 * time.Second)
	r.sy = follower
	r.ingress("second", "switchyard", "second.example.com", "web")
	r.servedBy("second.example.com", "le-a")
	r.waitStatus("second")
	lease, err = r.client.CoordinationV1().Leases("default").Get(r.ctx, "switchyard-leader", metav1.GetOptions{})
	if err != nil || !strings.HasSuffix(*lease.Spec.HolderIdentity, fmt.Sprintf("-%d", follower.Cmd.Process.Pid)) {
		t.Fatalf("the remaining replica did not take the Lease: %v %v", err, lease.Spec.HolderIdentity)
	}
	waitLeaderStatus(t, followerMetrics, 1)
}

// waitLeaderStatus waits until the replica whose metrics are at addr
// exports leader_election_status{name="switchyard-leader"} want.
func waitLeaderStatus(t *testing.T, addr string, want int) {
	t.Helper()
	line := fmt.Sprintf(`nginx_ingress_controller_leader_election_status{controller_class="switchyard",controller_namespace="default",controller_pod="",name="switchyard-leader"} %d`, want)
	harness.WaitFor(t, 30*time.Second, "leader_election_status "+strconv.Itoa(want)+" at "+addr, func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), line+"\n") {
			return fmt.Errorf("no %s", line)
		}
		return nil
	})
}

func (r *rig) waitStatus(name string) {
	r.t.Helper()
	harness.WaitFor(r.t, 30*time.Second, "the status of "+name, func() error {
		ing, err := r.client.NetworkingV1().Ingresses(r.ns).Get(r.ctx, name, metav1.GetOptions{})
		if err == nil && (len(ing.Status.LoadBalancer.Ingress) != 1 || ing.Status.LoadBalancer.Ingress[0].IP != statusAddr) {
			err = fmt.Errorf("status %+v", ing.Status.LoadBalancer)
		}
		return err
	})
}
