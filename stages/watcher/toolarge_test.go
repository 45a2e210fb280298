package watcher

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestStandInForLargeIngress replaces an Ingress over the bus limit with a
// small stand-in that keeps its name, class and age and says its size,
// leaves every other object as it is, and never changes the set it is given.
func TestStandInForLargeIngress(t *testing.T) {
	class := "switchyard"
	big := networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "big", Name: "huge", CreationTimestamp: metav1.Unix(1000, 0),
			Annotations: map[string]string{"filler": strings.Repeat("x", 1_260_000), legacyClassAnnotation: "switchyard"}},
		Spec: networkingv1.IngressSpec{IngressClassName: &class},
	}
	bigJSON, _ := json.Marshal(&big)
	bigKey := bus.ObjectKey(bus.ObjectIngress, "big", "huge")
	smallKey := bus.ObjectKey(bus.ObjectIngress, "good", "web")
	objects := map[string][]byte{bigKey: bigJSON, smallKey: []byte(`{"metadata":{"name":"web"}}`)}
	reported := map[string]int{}

	out := standIns(objects, reported, zap.NewNop())
	if len(objects[bigKey]) != len(bigJSON) {
		t.Fatal("the given set was changed")
	}
	if string(out[smallKey]) != string(objects[smallKey]) || len(out[bigKey]) > 1024 {
		t.Fatalf("want the small object as is and a small stand-in (%d bytes)", len(out[bigKey]))
	}
	var stand networkingv1.Ingress
	if err := json.Unmarshal(out[bigKey], &stand); err != nil {
		t.Fatal(err)
	}
	if stand.Name != "huge" || stand.Namespace != "big" || *stand.Spec.IngressClassName != class ||
		!stand.CreationTimestamp.Equal(&big.CreationTimestamp) || stand.Annotations[legacyClassAnnotation] != "switchyard" ||
		stand.Annotations[bus.AnnotationTooLarge] != itoa(len(bigJSON)) || stand.Annotations["filler"] != "" {
		t.Fatalf("stand-in: %+v", stand.ObjectMeta)
	}
	if reported[bigKey] != len(bigJSON) {
		t.Fatal("the large Ingress was not remembered as reported")
	}
	delete(objects, bigKey)
	if out := standIns(objects, reported, zap.NewNop()); len(reported) != 0 || len(out) != 1 {
		t.Fatal("a removed large Ingress is still remembered")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
