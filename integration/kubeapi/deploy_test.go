package kubeapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
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

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
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
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("a document that is not YAML: %v\n%s", err, doc)
		}
		if len(obj.Object) == 0 {
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
    nodePorts:
      http: 30080
      https: "30443"
      tcp:
        "5432": 30432
  addHeaders:
    X-Frame-Options: DENY
  proxySetHeaders:
    X-Team: edge
  priorityClassName: edge-critical
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}
  podSecurityContext:
    fsGroup: 2000
  extraVolumes:
  - {name: geoip, emptyDir: {}}
  extraVolumeMounts:
  - {name: geoip, mountPath: /etc/geoip}
  minAvailable: 1
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
imagePullSecrets:
- name: regcred
dhParam: QUFBQQ==
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
		// The ingress-nginx keys added with issue 17.
		"{name: http, port: 80, targetPort: http, nodePort: 30080}", "{name: https, port: 443, targetPort: https, nodePort: 30443}",
		"{name: tcp-5432, port: 5432, targetPort: tcp-5432, protocol: TCP, nodePort: 30432}",
		`add-headers: "edge/switchyard-custom-add-headers"`, `proxy-set-headers: "edge/switchyard-custom-proxy-headers"`,
		`"X-Frame-Options": "DENY"`, `"X-Team": "edge"`, `ssl-dh-param: "edge/switchyard-dh-param"`, `dhparam.pem: "QUFBQQ=="`,
		"priorityClassName: edge-critical", "maxUnavailable: 1", "topologyKey: topology.kubernetes.io/zone", "fsGroup: 2000",
		"runAsNonRoot: true", "- name: regcred", "mountPath: /etc/geoip", "name: geoip", "kind: PodDisruptionBudget",
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
	if len(objects["Deployment"]) != 1 || len(objects["Service"]) != 2 || len(objects["Job"]) != 0 || len(objects["ConfigMap"]) != 5 ||
		len(objects["PodDisruptionBudget"]) != 1 || len(objects["Secret"]) != 1 {
		t.Errorf("objects: %d Deployments, %d Services, %d Jobs, %d ConfigMaps, %d PodDisruptionBudgets, %d Secrets", len(objects["Deployment"]),
			len(objects["Service"]), len(objects["Job"]), len(objects["ConfigMap"]), len(objects["PodDisruptionBudget"]), len(objects["Secret"]))
	}
}

// TestChartSplitMode renders the chart with mode: split and applies it
// with server-side dry run: a three-node bus from switchyard's own image,
// one Deployment per stage with its own bus key only, API credentials for
// the watcher alone, NGINX ports on the appliers alone, probes on every
// process; the Services select the appliers and the webhook stage.
func TestChartSplitMode(t *testing.T) {
	rendered := helmTemplate(t, "edge", map[string]any{
		"mode":       "split",
		"controller": map[string]any{"replicaCount": 3},
		"split": map[string]any{"stageReplicas": 2, "nats": map[string]any{"storageClassName": "fast",
			"tls": map[string]any{"secretName": "bus-cert"}}},
		"tcp": map[string]any{"5432": "db/postgres:5432"},
	})
	cluster := kube.Start(t)
	objects := applyDryRun(t, cluster, "edge", rendered)
	if n := len(objects["StatefulSet"]); n != 1 {
		t.Fatalf("%d StatefulSets, want the bus's", n)
	}
	nats := objects["StatefulSet"][0]
	if replicas, _, _ := unstructured.NestedInt64(nats.Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("the bus has %d nodes, want 3", replicas)
	}
	natsArgs := containerArgs(t, nats)
	for _, want := range []string{"bus", "--nats-keys=/etc/switchyard/bus", "--cluster-password-file=/etc/switchyard/bus/cluster.pass",
		"--routes=switchyard-nats-0.switchyard-nats-cluster.edge.svc:6222,switchyard-nats-1.switchyard-nats-cluster.edge.svc:6222,switchyard-nats-2.switchyard-nats-cluster.edge.svc:6222",
		"--tls-cert=/etc/switchyard/bus-tls/tls.crt", "--tls-key=/etc/switchyard/bus-tls/tls.key", "--tls-ca=/etc/switchyard/bus-tls/ca.crt"} {
		if !slices.Contains(natsArgs, want) {
			t.Errorf("bus args %v lack %q", natsArgs, want)
		}
	}
	var natsItems []string
	for _, id := range bus.Identities {
		natsItems = append(natsItems, id+".pub")
	}
	if items := secretItems(t, nats); !slices.Equal(items, append(natsItems, "cluster.pass")) {
		t.Errorf("the bus mounts %v of the keys Secret, want the public keys and route password only", items)
	}
	if items, mounted := secretVolume(nats, "bus-cert"); !mounted || items != nil {
		t.Errorf("the bus mounts %v of its TLS Secret (mounted: %v), want all of it", items, mounted)
	}

	deployments := map[string]*unstructured.Unstructured{}
	for _, d := range objects["Deployment"] {
		deployments[strings.TrimPrefix(d.GetName(), "switchyard-")] = d
	}
	if len(deployments) != 6 {
		t.Fatalf("Deployments %v, want one per stage and the webhook", slices.Sorted(maps.Keys(deployments)))
	}
	for stage, d := range deployments {
		checkStageDeployment(t, stage, d)
	}
	if n := len(objects["Job"]); n != 3 {
		t.Errorf("%d Jobs, want the bus keys' and the webhook certificate's two", n)
	}
	for _, svc := range objects["Service"] {
		selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		want := map[string]string{"switchyard": "applier", "switchyard-admission": "webhook", "switchyard-nats": "nats", "switchyard-nats-cluster": "nats"}[svc.GetName()]
		if selector["app.kubernetes.io/component"] != want {
			t.Errorf("Service %s selects component %q, want %q", svc.GetName(), selector["app.kubernetes.io/component"], want)
		}
	}
	if len(objects["NetworkPolicy"]) != 1 {
		t.Errorf("%d NetworkPolicies for the bus", len(objects["NetworkPolicy"]))
	}
	// The bus's, and controller.minAvailable's over the 3 appliers.
	pdbs := map[string]string{}
	for _, pdb := range objects["PodDisruptionBudget"] {
		selector, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		pdbs[pdb.GetName()] = selector["app.kubernetes.io/component"]
	}
	if len(pdbs) != 2 || pdbs["switchyard"] != "applier" {
		t.Errorf("PodDisruptionBudgets (name: component): %v", pdbs)
	}
}

// checkStageDeployment: the stage runs on the bus with its own key only;
// only the watcher has API credentials, only the applier NGINX's ports;
// probes on /healthz and /readyz.
func checkStageDeployment(t *testing.T, stage string, d *unstructured.Unstructured) {
	t.Helper()
	args := containerArgs(t, d)
	for _, want := range []string{"stage", stage, "--nats=nats://switchyard-nats.edge.svc:4222", "--nats-keys=/etc/switchyard/bus", "--nats-replicas=3",
		"--nats-ca=/etc/switchyard/bus-tls/ca.crt"} {
		if !slices.Contains(args, want) {
			t.Errorf("%s: args %v lack %q", stage, args, want)
		}
	}
	if items := secretItems(t, d); !slices.Equal(items, []string{stage + ".nk"}) {
		t.Errorf("%s mounts %v of the keys Secret, want its own seed only", stage, items)
	}
	if items, _ := secretVolume(d, "bus-cert"); !slices.Equal(items, []string{"ca.crt"}) {
		t.Errorf("%s mounts %v of the bus TLS Secret, want the CA only", stage, items)
	}
	automount, found, _ := unstructured.NestedBool(d.Object, "spec", "template", "spec", "automountServiceAccountToken")
	account, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	if stage == "watcher" {
		if account != "switchyard" || (found && !automount) {
			t.Errorf("watcher: account %q, token mounted %v: it reads the API", account, !found || automount)
		}
	} else if account != "switchyard-stage" || !found || automount {
		t.Errorf("%s: account %q with an API token (automount %v, set %v)", stage, account, automount, found)
	}
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	wantReplicas := map[bool]int64{true: 3, false: 2}[stage == "applier"]
	if replicas != wantReplicas {
		t.Errorf("%s: %d replicas, want %d", stage, replicas, wantReplicas)
	}
	c := container(t, d)
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	var names []string
	for _, p := range ports {
		name, _, _ := unstructured.NestedString(p.(map[string]any), "name")
		names = append(names, name)
	}
	if hasHTTP := slices.Contains(names, "http") && slices.Contains(names, "tcp-5432"); hasHTTP != (stage == "applier") {
		t.Errorf("%s: ports %v (NGINX's only on the applier)", stage, names)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s: %s on %q, want %s", stage, probe, got, path)
		}
	}
}

func container(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%s: %d containers", obj.GetName(), len(containers))
	}
	return containers[0].(map[string]any)
}

func containerArgs(t *testing.T, obj *unstructured.Unstructured) []string {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(container(t, obj), "args")
	return args
}

// secretItems are the keys of the bus keys Secret a pod mounts.
func secretItems(t *testing.T, obj *unstructured.Unstructured) []string {
	t.Helper()
	keys, mounted := secretVolume(obj, "switchyard-bus-keys")
	if !mounted {
		t.Fatalf("%s mounts no bus keys", obj.GetName())
	}
	return keys
}

// secretVolume says whether obj's pods mount Secret secret, and which of
// its keys (nil: all).
func secretVolume(obj *unstructured.Unstructured, secret string) (keys []string, mounted bool) {
	volumes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		if name != secret {
			continue
		}
		items, _, _ := unstructured.NestedSlice(v.(map[string]any), "secret", "items")
		for _, it := range items {
			key, _, _ := unstructured.NestedString(it.(map[string]any), "key")
			keys = append(keys, key)
		}
		return keys, true
	}
	return nil, false
}

// TestBusKeysSecret: split mode's install Job (switchyard buskeys
// --secret) makes the keys Secret against the real API server: a seed per
// identity, the authorization naming each one's public key, a route
// password; run again, it keeps the Secret as it is.
func TestBusKeysSecret(t *testing.T) {
	cluster := kube.Start(t)
	ctx := t.Context()
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buskeys := func() string {
		out, err := exec.Command(harness.Binary(t), "buskeys", "--secret", "edge/switchyard-bus-keys", "--kubeconfig", cluster.Kubeconfig).CombinedOutput()
		if err != nil {
			t.Fatalf("buskeys --secret: %v\n%s", err, out)
		}
		return string(out)
	}
	buskeys()
	secret, err := cluster.Client.CoreV1().Secrets("edge").Get(ctx, "switchyard-bus-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	auth := string(secret.Data["nats-auth.conf"])
	for _, id := range bus.Identities {
		kp, err := nkeys.FromSeed(bytes.TrimSpace(secret.Data[id+".nk"]))
		if err != nil {
			t.Fatalf("%s.nk: %v", id, err)
		}
		pub, _ := kp.PublicKey()
		if !strings.Contains(auth, pub) || string(bytes.TrimSpace(secret.Data[id+".pub"])) != pub {
			t.Errorf("nats-auth.conf or %s.pub does not name %s's key", id, id)
		}
	}
	if len(bytes.TrimSpace(secret.Data["cluster.pass"])) < 32 {
		t.Errorf("route password %d bytes", len(secret.Data["cluster.pass"]))
	}
	if out := buskeys(); !strings.Contains(out, "exists; kept") {
		t.Errorf("second run: %s", out)
	}
	again, err := cluster.Client.CoreV1().Secrets("edge").Get(ctx, "switchyard-bus-keys", metav1.GetOptions{})
	if err != nil || !maps.EqualFunc(again.Data, secret.Data, bytes.Equal) {
		t.Errorf("the second run changed the Secret (%v)", err)
	}
}
