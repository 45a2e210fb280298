package status

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"switchyard.dev/switchyard/bus"
)

// TestUpdateInfos feeds translator snapshots to the status writer's view:
// the first is the whole table, later ones carry only the keys put and
// deleted, and keys of other kinds are ignored.
func TestUpdateInfos(t *testing.T) {
	info := func(ns, name string, rejected bool) []byte {
		data, err := json.Marshal(bus.IngressInfo{Namespace: ns, Name: name, Rejected: rejected})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	infos := map[string]bus.IngressInfo{"stale/left-over": {}}
	updateInfos(infos, bus.Snapshot{Full: true, Puts: map[string][]byte{
		bus.Key(bus.KindIngress, "ns", "a"): info("ns", "a", false),
		bus.Key(bus.KindIngress, "ns", "b"): info("ns", "b", false),
		bus.Key(bus.KindBackend, "ns-a-80"): []byte(`{"name":"ns-a-80"}`),
	}})
	if got := slices.Sorted(maps.Keys(infos)); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("after the whole table: %v", got)
	}
	updateInfos(infos, bus.Snapshot{
		Puts:    map[string][]byte{bus.Key(bus.KindIngress, "ns", "b"): info("ns", "b", true)},
		Deletes: []string{bus.Key(bus.KindIngress, "ns", "a"), bus.Key(bus.KindBackend, "ns-a-80")},
	})
	if got := slices.Sorted(maps.Keys(infos)); !slices.Equal(got, []string{"ns/b"}) || !infos["ns/b"].Rejected {
		t.Fatalf("after a change: %v", infos)
	}
}

// TestWithRefusals: a refused Ingress is not served and its refusal is
// one of its problems; a ConfigMap key's refusal touches no Ingress.
func TestWithRefusals(t *testing.T) {
	own := bus.Problem{Field: "spec", Reason: "Own", Message: "m"}
	infos := map[string]bus.IngressInfo{
		"ns/a": {Namespace: "ns", Name: "a", Problems: []bus.Problem{own}},
		"ns/b": {Namespace: "ns", Name: "b"},
	}
	ing := bus.Refusal{Kind: bus.RefusedIngress, Name: "ns/a", Rev: "0123456789ab", Message: `unknown directive "x"`}
	key := bus.Refusal{Kind: bus.RefusedConfigMap, Name: "ssl-ciphers", Rev: "0123456789ab", Message: "no cipher match"}
	gone := bus.Refusal{Kind: bus.RefusedIngress, Name: "ns/gone", Rev: "0123456789ab"}
	got := withRefusals(infos, map[string]bus.Refusal{ing.Key(): ing, key.Key(): key, gone.Key(): gone})
	a := got["ns/a"]
	if !a.Rejected || len(a.Problems) != 2 || a.Problems[0] != own || a.Problems[1].Reason != bus.ReasonRefusedByNginx ||
		a.Problems[1].Field != "nginx" {
		t.Fatalf("refused Ingress: %+v", a)
	}
	if b := got["ns/b"]; b.Rejected || len(b.Problems) != 0 {
		t.Fatalf("other Ingress: %+v", b)
	}
	if _, ok := got["ns/gone"]; ok || len(got) != 2 {
		t.Fatalf("views: %v", got)
	}
	if len(infos["ns/a"].Problems) != 1 || infos["ns/a"].Rejected {
		t.Fatal("the translator's view was changed")
	}
}

// TestSettingsProblemsEvented: the controller ConfigMap's problems become
// Warning Events on it, once per change.
func TestSettingsProblemsEvented(t *testing.T) {
	client := eventsClient()
	w := &writer{client: client, cfg: Config{ConfigMap: "ingress/controller"}, log: zap.NewNop()}
	s := bus.DefaultSettings()
	s.Problems = []bus.Problem{
		{Field: "data.http-snippet", Reason: "Refused", Message: "http-snippet is refused"},
		{Field: "data.ssl-redirekt", Reason: "UnknownKey", Message: "typo"},
	}
	data, _ := json.Marshal(s)
	problems, ok := settingsProblemsOf(bus.Snapshot{Puts: map[string][]byte{bus.SettingsKey: data}})
	if !ok || len(problems) != 2 {
		t.Fatalf("problems %v, %v", problems, ok)
	}
	ctx := context.Background()
	w.reportSettingsProblems(ctx, problems)
	w.reportSettingsProblems(ctx, slices.Clone(problems)) // unchanged: no new Events
	events, err := client.CoreV1().Events("ingress").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "ConfigMap" || e.InvolvedObject.Name != "controller" || e.Type != "Warning" {
			t.Errorf("event %+v", e)
		}
		reasons = append(reasons, e.Reason)
	}
	slices.Sort(reasons)
	if !slices.Equal(reasons, []string{"Refused", "UnknownKey"}) {
		t.Fatalf("event reasons %v", reasons)
	}
	if _, ok := settingsProblemsOf(bus.Snapshot{Puts: map[string][]byte{}}); ok {
		t.Fatal("a snapshot without settings gave problems")
	}
}

// TestServicesRefusalsEvented: a TCP or UDP services entry NGINX refused
// (its port held by another process) becomes a Warning Event on that
// protocol's services ConfigMap, naming the port's key, once; the
// controller ConfigMap's refused keys go on the controller ConfigMap; an
// Ingress's refusal is not a ConfigMap's.
func TestServicesRefusalsEvented(t *testing.T) {
	client := eventsClient()
	w := &writer{client: client, log: zap.NewNop(), keysEvented: map[string]bus.Refusal{}, cfg: Config{
		ConfigMap: "ingress/controller", TCPServicesConfigMap: "ingress/tcp", UDPServicesConfigMap: "dns/udp",
	}}
	refusals := []bus.Refusal{
		{Kind: bus.RefusedServices, Name: "tcp/9000", Rev: "0123456789ab", Message: "bind() to 0.0.0.0:9000 failed (98: Address in use)"},
		{Kind: bus.RefusedServices, Name: "udp/53", Rev: "0123456789ab", Message: "bind() to 0.0.0.0:53 failed (98: Address in use)"},
		{Kind: bus.RefusedConfigMap, Name: "ssl-ciphers", Rev: "0123456789ab", Message: "no cipher match"},
		{Kind: bus.RefusedIngress, Name: "shop/web", Rev: "0123456789ab", Message: "unknown directive"},
	}
	w.refusals = map[string]bus.Refusal{}
	for _, r := range refusals {
		w.refusals[r.Key()] = r
	}
	ctx := context.Background()
	w.reportKeyRefusals(ctx)
	w.reportKeyRefusals(ctx) // unchanged: no new Events
	want := map[string]string{"ingress/tcp": "data.9000", "dns/udp": "data.53", "ingress/controller": "data.ssl-ciphers"}
	got := map[string]string{}
	for _, ns := range []string{"ingress", "dns", "shop"} {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			obj := e.InvolvedObject
			if obj.Kind != "ConfigMap" || e.Type != "Warning" || e.Reason != bus.ReasonRefusedByNginx {
				t.Errorf("event %+v", e)
			}
			if _, dup := got[obj.Namespace+"/"+obj.Name]; dup {
				t.Errorf("two Events on %s/%s", obj.Namespace, obj.Name)
			}
			got[obj.Namespace+"/"+obj.Name] = e.InvolvedObject.FieldPath + fieldOf(e.Message)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Events on %v, want on %v", got, want)
	}
	for cm, field := range want {
		if !strings.Contains(got[cm], field) {
			t.Errorf("the Event on %s says %q, want it to name %s", cm, got[cm], field)
		}
	}
}

// fieldOf is the field an Event's message names (eventOn writes it first).
func fieldOf(message string) string {
	field, _, _ := strings.Cut(message, ":")
	return field
}

// eventsClient is a fake client that names Events from their generateName,
// as the API server does (the fake one does not).
func eventsClient() *fake.Clientset {
	client := fake.NewSimpleClientset()
	n := 0
	client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ev := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		n++
		ev.Name = ev.GenerateName + strconv.Itoa(n)
		return false, nil, nil
	})
	return client
}

// TestLeaveStatus: with ingress-nginx's --update-status=false no Ingress's
// status is written; otherwise the served Ingress gets the address.
func TestLeaveStatus(t *testing.T) {
	for _, leave := range []bool{false, true} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
		client := fake.NewClientset(ing)
		w := &writer{client: client, log: zap.NewNop(), written: map[string]bool{},
			cfg:   Config{PublishAddresses: []string{"192.0.2.7"}, LeaveStatus: leave},
			infos: map[string]bus.IngressInfo{"ns/web": {Namespace: "ns", Name: "web"}}}
		ctx := context.Background()
		w.writeStatus(ctx)
		got, err := client.NetworkingV1().Ingresses("ns").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if written := len(got.Status.LoadBalancer.Ingress) == 1; written == leave {
			t.Errorf("LeaveStatus %v: status %+v", leave, got.Status.LoadBalancer)
		}
	}
}
