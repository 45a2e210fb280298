package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// serveArg makes the test binary an HTTP server instead of running tests:
// `kube.test serve-http ADDR` answers every request with "netns <inode> ADDR".
const serveArg = "switchyard-serve-http"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == serveArg {
		serveHTTP(os.Args[2])
		return
	}
	os.Exit(m.Run())
}

func serveHTTP(addr string) {
	netns, _ := os.Readlink("/proc/self/ns/net")
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", netns, addr)
	})}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Close() }()
	_ = srv.Serve(l)
}

func TestClusterObjectsSurviveAPIServerRestart(t *testing.T) {
	c := Start(t)
	backend := NewNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client

	const ns = "sy-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	_, serviceNet, _ := net.ParseCIDR(ServiceCIDR)
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil || !serviceNet.Contains(ip) {
		t.Errorf("cluster IP %q is not in %s", svc.Spec.ClusterIP, ServiceCIDR)
	}

	slice := func(name, addr string) *discoveryv1.EndpointSlice {
		port, proto, ready := int32(8080), corev1.ProtocolTCP, true
		portName := "http"
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: map[string]string{discoveryv1.LabelServiceName: "echo"},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{addr},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		}
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice("echo-abc", backend.Addr), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create EndpointSlice with %s: %v", backend.Addr, err)
	}
	// The reason backends live in network namespaces.
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice("echo-loopback", "127.0.0.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("EndpointSlice with 127.0.0.1: got %v, want an Invalid error", err)
	}

	check := func(when string) {
		t.Helper()
		svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list services: %v", when, err)
		}
		if len(svcs.Items) != 1 || svcs.Items[0].Name != "echo" || svcs.Items[0].Spec.ClusterIP != svc.Spec.ClusterIP {
			t.Errorf("%s: services = %+v", when, svcs.Items)
		}
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=echo",
		})
		if err != nil {
			t.Fatalf("%s: list EndpointSlices: %v", when, err)
		}
		if len(slices.Items) != 1 || len(slices.Items[0].Endpoints) != 1 ||
			slices.Items[0].Endpoints[0].Addresses[0] != backend.Addr {
			t.Errorf("%s: EndpointSlices = %+v", when, slices.Items)
		}
	}
	check("before the restart")

	// RBAC is real: a user without bindings is forbidden.
	_, aliceCfg := c.User(t, "alice")
	alice := kubernetes.NewForConfigOrDie(aliceCfg)
	if _, err := alice.CoreV1().Services(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists services: got %v, want Forbidden", err)
	}
	// The admin kubeconfig file works.
	if b, err := os.ReadFile(c.Kubeconfig); err != nil || !strings.Contains(string(b), c.Host) {
		t.Errorf("kubeconfig %s: %v\n%s", c.Kubeconfig, err, b)
	}

	c.StopAPIServer(t)
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	if _, err := cs.CoreV1().Services(ns).List(short, metav1.ListOptions{}); err == nil {
		t.Errorf("the API server answered while stopped")
	}
	cancelShort()
	c.StartAPIServer(t)
	check("after the restart")

	// Still writable after the restart.
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "echo-abc", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete EndpointSlice after the restart: %v", err)
	}
}

func TestNetnsServesHTTPToTheHost(t *testing.T) {
	n := NewNetns(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(n.Addr, "8080")
	n.Start(t, self, serveArg, addr)

	hostNetns, _ := os.Readlink("/proc/self/ns/net")
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := string(body)
			if resp.StatusCode != http.StatusOK || !strings.HasSuffix(got, " "+addr) {
				t.Fatalf("GET %s: %s %q", addr, resp.Status, got)
			}
			if strings.HasPrefix(got, hostNetns+" ") {
				t.Fatalf("the server runs in the host's network namespace (%s)", hostNetns)
			}
			t.Logf("GET http://%s/ from the host: %q (host: %s)", addr, got, hostNetns)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Two namespaces get different subnets.
	m := NewNetns(t)
	if m.Addr == n.Addr || m.HostAddr == n.HostAddr {
		t.Errorf("two namespaces share addresses: %+v %+v", n, m)
	}
}
