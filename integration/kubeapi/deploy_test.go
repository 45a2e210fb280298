package kubeapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
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

	"switchyard.dev/switchyard/integration/kube"
)

// TestDeployManifestsAreValid applies deploy/switchyard.yaml to a real API
// server with server-side dry run: every object must be accepted as
// written, so the install never drifts from what Kubernetes takes.
func TestDeployManifestsAreValid(t *testing.T) {
	cluster := kube.Start(t)
	data, err := os.ReadFile("../../deploy/switchyard.yaml")
	if err != nil {
		t.Fatal(err)
	}
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
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "switchyard-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	applied := 0
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
		applied++
	}
	if applied < 9 {
		t.Fatalf("only %d objects in deploy/switchyard.yaml", applied)
	}
}
