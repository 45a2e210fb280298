package kubeapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"

	"switchyard.dev/switchyard/integration/kube"
	"switchyard.dev/switchyard/internal/chart"
)

const (
	chartDir     = "../../deploy/helm/switchyard"
	manifestPath = "../../deploy/switchyard.yaml"
)

// applyDryRun applies every object of a multi-document YAML to the API
// server with server-side dry run and returns the objects by kind; each
// must be accepted as written. The namespace ns is created first.
func applyDryRun(t *testing.T, cluster *kube.Cluster, ns string, data []byte) map[string][]*unstructured.Unstructured {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	ctx := t.Context()
	// Namespaced objects need their namespace to exist, even in a dry run.
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil || len(obj.Object) == 0 {
			continue
		}
		mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
		if err != nil {
			t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		body, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		client := dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		force := true
		if _, err := client.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
			DryRun: []string{metav1.DryRunAll}, FieldManager: "switchyard-test", Force: &force,
		}); err != nil {
			t.Errorf("server-side dry run of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		byKind[obj.GetKind()] = append(byKind[obj.GetKind()], obj)
	}
	return byKind
}

// helmTemplate renders the chart as release "switchyard" in ns with
// values over its defaults, as helm template does (Helm's own engine).
func helmTemplate(t *testing.T, ns string, values map[string]any) []byte {
	t.Helper()
	out, err := chart.Render(chartDir, "switchyard", ns, values)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeployManifestsAreValid applies deploy/switchyard.yaml to a real API
// server with server-side dry run: every object must be accepted as
// written, so the install never drifts from what Kubernetes takes.
func TestDeployManifestsAreValid(t *testing.T) {
	cluster := kube.Start(t)
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	objects := applyDryRun(t, cluster, "switchyard-system", data)
	applied := 0
	for _, objs := range objects {
		applied += len(objs)
	}
	if applied < 9 {
		t.Fatalf("only %d objects in deploy/switchyard.yaml", applied)
	}
}

// TestDeployManifestIsTheChart: deploy/switchyard.yaml is the chart with
// its defaults (make deploy-manifest), so the two installs cannot differ.
func TestDeployManifestIsTheChart(t *testing.T) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	rendered := helmTemplate(t, "switchyard-system", nil)
	if !bytes.HasSuffix(data, rendered) {
		t.Fatal("deploy/switchyard.yaml is not the chart's defaults rendered; run make deploy-manifest")
	}
}

// TestChartWithIngressNginxValues renders the chart with a values file in
// ingress-nginx's shape and applies it with server-side dry run: the
// values land where an ingress-nginx user expects them.
func TestChartWithIngressNginxValues(t *testing.T) {
	var values map[string]any
	if err := sigsyaml.Unmarshal([]byte(`controller:
  replicaCount: 2
  config:
    proxy-body-size: 50m
    use-gzip: true
  ingressClassResource:
    name: nginx-next
    default: true
  extraArgs:
    default-ssl-certificate: edge/wildcard
  service:
    type: NodePort
    annotations:
      service.beta.kubernetes.io/aws-load-balancer-type: nlb
  metrics:
    service:
      enabled: true
  admissionWebhooks:
    enabled: false
  nodeSelector:
    role: edge
  tolerations:
  - {key: dedicated, operator: Equal, value: edge, effect: NoSchedule}
  podAnnotations:
    prometheus.io/scrape: "true"
tcp:
  "5432": "db/postgres:5432"
  "1883": "mqtt/broker:1883:PROXY"
udp:
  "53": "kube-system/dns:53"
`), &values); err != nil {
		t.Fatal(err)
	}
	rendered := helmTemplate(t, "edge", values)
	text := string(rendered)
	for _, want := range []string{
		"replicas: 2", `proxy-body-size: "50m"`, `use-gzip: "true"`, "name: nginx-next", `ingressclass.kubernetes.io/is-default-class: "true"`,
		"- --default-ssl-certificate=edge/wildcard", "type: NodePort", "aws-load-balancer-type: nlb", "name: switchyard-metrics",
		"role: edge", "key: dedicated", `prometheus.io/scrape: "true"`, "- --configmap=edge/switchyard",
		"- --tcp-services-configmap=edge/switchyard-tcp", "- --udp-services-configmap=edge/switchyard-udp",
		`"5432": "db/postgres:5432"`, `"1883": "mqtt/broker:1883:PROXY"`, `"53": "kube-system/dns:53"`,
		"{name: tcp-5432, containerPort: 5432, protocol: TCP}", "{name: udp-53, containerPort: 53, protocol: UDP}",
		"{name: tcp-1883, port: 1883, targetPort: tcp-1883, protocol: TCP}",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered chart lacks %q", want)
		}
	}
	for _, unwanted := range []string{"ValidatingWebhookConfiguration", "--validating-webhook"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("admissionWebhooks.enabled false, but the chart renders %q", unwanted)
		}
	}
	cluster := kube.Start(t)
	objects := applyDryRun(t, cluster, "edge", rendered)
	if len(objects["Deployment"]) != 1 || len(objects["Service"]) != 2 || len(objects["Job"]) != 0 || len(objects["ConfigMap"]) != 3 {
		t.Errorf("objects: %d Deployments, %d Services, %d Jobs, %d ConfigMaps", len(objects["Deployment"]), len(objects["Service"]), len(objects["Job"]), len(objects["ConfigMap"]))
	}
}
