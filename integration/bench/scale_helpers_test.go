package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/translator"
)

// scaleEnv sets how many Ingresses TestBenchScale creates.
const scaleEnv = "SWITCHYARD_SCALE_N"

const (
	defaultScaleN = 10000
	scaleNS       = "default"
	perFile       = 100 // Ingresses per manifest file
)

func scaleN(t *testing.T) int {
	v := os.Getenv(scaleEnv)
	if v == "" {
		return defaultScaleN
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", scaleEnv, v)
	}
	return n
}

func scaleHost(i int) string    { return fmt.Sprintf("h%d.scale.test", i) }
func scaleService(i int) string { return fmt.Sprintf("svc-%d", i) }

// scaleSnapshot is n Ingresses, each with its own host, Service and
// EndpointSlice (one ready endpoint on 127.0.0.1:port), and the IngressClass
// they name, as typed objects.
func scaleSnapshot(n, port int) translator.Snapshot {
	snap := translator.Snapshot{
		IngressClasses: []*networkingv1.IngressClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
			Spec:       networkingv1.IngressClassSpec{Controller: translator.DefaultConfig().ControllerClass},
		}},
	}
	for i := range n {
		svc := scaleService(i)
		snap.Ingresses = append(snap.Ingresses, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ing-%d", i), Namespace: scaleNS, Generation: 1},
			Spec: networkingv1.IngressSpec{
				IngressClassName: new("switchyard"),
				Rules: []networkingv1.IngressRule{{
					Host: scaleHost(i),
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{
							Path:     "/",
							PathType: new(networkingv1.PathTypePrefix),
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
								Name: svc, Port: networkingv1.ServiceBackendPort{Name: "http"},
							}},
						}},
					}},
				}},
			},
		})
		snap.Services = append(snap.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: scaleNS},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		})
		snap.EndpointSlices = append(snap.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", svc, port), Namespace: scaleNS,
				Labels: map[string]string{discoveryv1.LabelServiceName: svc},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(port))}},
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{"127.0.0.1"},
				Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
			}},
		})
	}
	return snap
}

// writeScaleManifests writes n Ingresses with their Services and
// EndpointSlices as files of perFile each. Ingress 0's Service lives alone in
// endpoint.yaml, so the endpoint change rewrites one small file.
func writeScaleManifests(t *testing.T, dir string, n, port int) (files int) {
	t.Helper()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	for first := 0; first < n; first += perFile {
		var b strings.Builder
		for i := first; i < min(first+perFile, n); i++ {
			if b.Len() > 0 {
				b.WriteString("---\n")
			}
			b.WriteString(harness.IngressYAML(scaleNS, fmt.Sprintf("ing-%d", i), scaleHost(i),
				harness.Path{Path: "/", Type: "Prefix", Service: scaleService(i)}))
			if i > 0 {
				b.WriteString("---\n")
				b.WriteString(harness.ServiceYAML(scaleNS, scaleService(i), port))
			}
		}
		harness.WriteFile(t, filepath.Join(dir, fmt.Sprintf("scale-%05d.yaml", first/perFile)), b.String())
		files++
	}
	setScaleEndpoint(t, dir, port)
	return files + 2
}

func setScaleEndpoint(t *testing.T, dir string, port int) {
	harness.WriteFile(t, filepath.Join(dir, "endpoint.yaml"), harness.ServiceYAML(scaleNS, scaleService(0), port))
}

// changeIngress is change.yaml for step i: host change.scale.test with the
// Exact paths /v0 … /v<i> (step -1: /base only), on the echo Service.
func changeIngress(i int) string {
	paths := []harness.Path{{Path: "/base", Type: "Exact", Service: "echo"}}
	for j := 0; j <= i; j++ {
		paths = append(paths, harness.Path{Path: fmt.Sprintf("/v%d", j), Type: "Exact", Service: "echo"})
	}
	return harness.IngressYAML(scaleNS, "change", changeHost, paths...)
}

const changeHost = "change.scale.test"

// waitAnswer polls GET http://addr/path with Host host every interval
// until it answers 200 (from pod, when pod is set), or timeout passes. It
// returns when that happened and, on timeout, the last thing seen.
func waitAnswer(addr, host, path, pod string, interval, timeout time.Duration) (time.Time, error) {
	client := harness.NewClient()
	deadline := time.Now().Add(timeout)
	last := "no request sent"
	for {
		r, err := harness.Do(client, "GET", "http://"+addr+path, host, nil)
		switch {
		case err != nil:
			last = err.Error()
		case r.Status == 200 && (pod == "" || (r.Echo != nil && r.Echo.Pod == pod)):
			return time.Now(), nil
		case r.Echo != nil:
			last = fmt.Sprintf("status %d from pod %s", r.Status, r.Echo.Pod)
		default:
			last = fmt.Sprintf("status %d", r.Status)
		}
		if time.Now().After(deadline) {
			want := "200"
			if pod != "" {
				want += " by " + pod
			}
			return time.Time{}, fmt.Errorf("GET http://%s%s with Host %s: no %s within %s; last: %s",
				addr, path, host, want, timeout, last)
		}
		time.Sleep(interval)
	}
}

// procStatus reads VmRSS and VmHWM (peak) of a process, in bytes.
func procStatus(pid int) (rss, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", name, value, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// dirSize sums the sizes of the regular files below dir.
func dirSize(dir string) (bytes int64, files int, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		bytes += info.Size()
		files++
		return nil
	})
	return bytes, files, err
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// endpointChanges moves the first scale host's endpoint between the two
// echo backends, changes times, and measures each change to the first
// answer from the new one. It stops at the first change never served.
func endpointChanges(rep *strings.Builder, t *testing.T, sy *harness.Switchyard, dir string, portA, portB int) (series, error) {
	change := series{name: "one-endpoint change to traffic on it"}
	for i := range changes {
		if !budget(rep, t, change) {
			break
		}
		port, pod := portB, "pod-b"
		if i%2 == 1 {
			port, pod = portA, "pod-a"
		}
		begin := time.Now()
		setScaleEndpoint(t, dir, port)
		at, err := waitAnswer(sy.HTTPAddr, scaleHost(0), "/", pod, changePoll, changeTimeout)
		if err != nil {
			return change, fmt.Errorf("one-endpoint change %d: %w", i, err)
		}
		change.samples = append(change.samples, at.Sub(begin))
	}
	return change, nil
}
