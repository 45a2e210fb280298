// Package status writes what the pipeline did back to Kubernetes: the
// status.loadBalancer of every Ingress the applier applied, and an Event
// for every Ingress (or controller ConfigMap key) whose problems changed.
// It follows the bus (the translator's per-Ingress information and the
// applier's results) and writes through client-go; it is not a stage and
// publishes nothing. The watcher starts it when it watches the API server.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/telemetry"
)

// Config says where Ingresses are reachable and how the replicas
// agree on which one writes.
type Config struct {
	// PublishAddresses (--publish-status-address) are IPs or host names
	// written to status.loadBalancer.ingress.
	PublishAddresses []string
	// PublishService (--publish-service, "namespace/name") supplies the
	// addresses instead: its load balancer ingress, else its external IPs.
	PublishService string
	// LeaveStatus (ingress-nginx's --update-status=false): no Ingress's
	// status is written or cleared; Events still are.
	LeaveStatus bool
	// ElectionID names the Lease; ElectionNamespace is where it lives.
	ElectionID, ElectionNamespace string
	// Identity of this replica in the election.
	Identity string
	// ControllerName is the source of the Events written.
	ControllerName string
	// ConfigMap is the controller ConfigMap ("namespace/name"): a key of
	// it NGINX refused gets an Event there.
	ConfigMap string
	// TCPServicesConfigMap and UDPServicesConfigMap ("namespace/name",
	// --tcp-services-configmap, --udp-services-configmap): an entry NGINX
	// refused (its port held by another process, say) gets an Event on
	// its ConfigMap.
	TCPServicesConfigMap, UDPServicesConfigMap string
}

// Run takes part in leader election and, while leading, writes the
// status of every Ingress the applier has applied and an Event for every
// Ingress whose problems changed. Only the leader writes, so replicas never
// fight over a status.
func Run(ctx context.Context, conn *bus.Conn, client kubernetes.Interface, cfg Config, log *zap.Logger) error {
	if cfg.ElectionID == "" {
		cfg.ElectionID = "switchyard-leader"
	}
	if cfg.ElectionNamespace == "" {
		cfg.ElectionNamespace = "default"
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: cfg.ElectionID, Namespace: cfg.ElectionNamespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	w := &writer{client: client, cfg: cfg, log: log, written: map[string]bool{}, evented: map[string][]bus.Problem{},
		keysEvented: map[string]bus.Refusal{}}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: cfg.ElectionID,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				telemetry.Get().LeaderElection(cfg.ElectionID, true)
				log.Info("leading: writing Ingress status", zap.String("identity", cfg.Identity))
				if err := w.run(ctx, conn); err != nil && ctx.Err() == nil {
					log.Error("status writer stopped", zap.Error(err))
				}
			},
			OnStoppedLeading: func() {
				telemetry.Get().LeaderElection(cfg.ElectionID, false)
				log.Info("no longer leading", zap.String("identity", cfg.Identity))
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	// A follower exports 0, as a leader that stepped down does.
	telemetry.Get().LeaderElection(cfg.ElectionID, false)
	// Run returns when leadership is lost; stand again until ctx ends.
	for ctx.Err() == nil {
		elector.Run(ctx)
	}
	return nil
}

type writer struct {
	client kubernetes.Interface
	cfg    Config
	log    *zap.Logger

	infos    map[string]bus.IngressInfo // translator's view, by "namespace/name"
	infosGen uint64                     // generation of that view
	applied  uint64                     // last generation applied without error
	// refusals are the applier's (bus/refusals.go), by table key; a
	// refused Ingress is not served, and its refusal is one of its
	// problems.
	refusals    map[string]bus.Refusal
	keysEvented map[string]bus.Refusal // ConfigMap keys' refusals reported

	written map[string]bool          // Ingresses whose status we wrote
	evented map[string][]bus.Problem // problems last reported per Ingress
	// settingsEvented are the controller ConfigMap's problems last
	// reported (keys not supported, refused, unknown, invalid values).
	settingsEvented []bus.Problem
}

// run follows the translator's per-Ingress information and the applier's
// results until ctx ends.
func (w *writer) run(ctx context.Context, conn *bus.Conn) error {
	results, sub, err := conn.SubscribeAll(ctx, bus.ApplyResultSubject)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	w.applied = lastApplied(ctx, conn)
	type view struct {
		infos map[string]bus.IngressInfo
		gen   uint64
	}
	snapshots := make(chan view, 1)
	settingsProblems := make(chan []bus.Problem, 1)
	go func() {
		infos := map[string]bus.IngressInfo{}
		_ = bus.Follow(ctx, conn, bus.StageAnnotations, func(_ context.Context, snap bus.Snapshot) error {
			if problems, ok := settingsProblemsOf(snap); ok {
				select { // keep only the newest
				case <-settingsProblems:
				default:
				}
				settingsProblems <- problems
			}
			updateInfos(infos, snap)
			select { // keep only the newest view
			case <-snapshots:
			default:
			}
			snapshots <- view{maps.Clone(infos), snap.Meta.Generation}
			return nil
		})
	}()
	refusals := make(chan map[string]bus.Refusal, 1)
	go followRefusals(ctx, conn, refusals)
	var raw map[string]bus.IngressInfo
	resync := time.NewTicker(30 * time.Second)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case v := <-snapshots:
			raw, w.infosGen = v.infos, v.gen
			w.infos = withRefusals(raw, w.refusals)
			w.reportProblems(ctx)
		case problems := <-settingsProblems:
			w.reportSettingsProblems(ctx, problems)
		case r := <-refusals:
			w.refusals = r
			if raw != nil {
				w.infos = withRefusals(raw, w.refusals)
				w.reportProblems(ctx)
			}
			w.reportKeyRefusals(ctx)
		case m := <-results:
			var res bus.ApplyResult
			if json.Unmarshal(m.Data, &res) != nil || res.ReloadPending {
				continue
			}
			if res.Error != "" {
				// Which of several appliers: its own log says why.
				w.log.Warn("an applier failed to apply a generation", zap.String("applier", res.Instance), zap.Uint64("generation", res.Generation))
				continue
			}
			w.applied = max(w.applied, res.Generation)
		case <-resync.C:
			// Addresses of --publish-service may change; someone may
			// have edited a status by hand.
			w.written = map[string]bool{}
		}
		if w.infos != nil && w.applied >= w.infosGen {
			w.writeStatus(ctx)
		}
	}
}

// updateInfos applies the Ingress keys a translator snapshot puts and
// deletes (starting over on the first), decoding only what changed.
func updateInfos(infos map[string]bus.IngressInfo, snap bus.Snapshot) {
	if snap.Full {
		clear(infos)
	}
	for _, key := range snap.Deletes {
		if name, ok := ingressName(key); ok {
			delete(infos, name)
		}
	}
	for key, data := range snap.Puts {
		name, ok := ingressName(key)
		if !ok {
			continue
		}
		var info bus.IngressInfo
		if json.Unmarshal(data, &info) == nil {
			infos[name] = info
		} else {
			delete(infos, name)
		}
	}
}

// followRefusals sends the newest view of the applier's refusals table.
func followRefusals(ctx context.Context, conn *bus.Conn, out chan map[string]bus.Refusal) {
	table := bus.RefusalTable{}
	_ = bus.Follow(ctx, conn, bus.TableRefusals, func(_ context.Context, snap bus.Snapshot) error {
		table.Update(snap)
		select { // keep only the newest view
		case <-out:
		default:
		}
		out <- maps.Clone(map[string]bus.Refusal(table))
		return nil
	})
}

// withRefusals is the Ingresses' information with each refused Ingress
// not served and its refusal among its problems.
func withRefusals(infos map[string]bus.IngressInfo, refusals map[string]bus.Refusal) map[string]bus.IngressInfo {
	out := maps.Clone(infos)
	for _, ref := range refusals {
		info, ok := out[ref.Name]
		if ref.Kind != bus.RefusedIngress || !ok {
			continue
		}
		info.Problems = append(slices.Clone(info.Problems), ref.Problem())
		info.Rejected = true
		out[ref.Name] = info
	}
	return out
}

// reportKeyRefusals writes a Warning Event on a ConfigMap for each of its
// keys NGINX newly refused: the controller ConfigMap's, and the TCP and
// UDP services ConfigMaps' entries.
func (w *writer) reportKeyRefusals(ctx context.Context) {
	for key, ref := range w.refusals {
		cm := w.refusedConfigMap(ref)
		if cm == "" || w.keysEvented[key] == ref {
			continue
		}
		w.keysEvented[key] = ref
		ns, name, ok := strings.Cut(cm, "/")
		if !ok {
			continue
		}
		w.eventOn(ctx, corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: name}, ref.Problem(), "")
	}
	for key := range w.keysEvented {
		if _, still := w.refusals[key]; !still {
			delete(w.keysEvented, key)
		}
	}
}

// refusedConfigMap is the ConfigMap ("namespace/name") a refused key or
// services entry comes from, or "" for a refusal of another kind.
func (w *writer) refusedConfigMap(ref bus.Refusal) string {
	switch ref.Kind {
	case bus.RefusedConfigMap:
		return w.cfg.ConfigMap
	case bus.RefusedServices:
		protocol, _, _ := strings.Cut(ref.Name, "/")
		if protocol == "udp" {
			return w.cfg.UDPServicesConfigMap
		}
		return w.cfg.TCPServicesConfigMap
	}
	return ""
}

// settingsProblemsOf returns the controller ConfigMap's problems when the
// snapshot holds the settings.
func settingsProblemsOf(snap bus.Snapshot) ([]bus.Problem, bool) {
	data, ok := snap.Puts[bus.SettingsKey]
	if !ok {
		return nil, false
	}
	var s bus.Settings
	if json.Unmarshal(data, &s) != nil {
		return nil, false
	}
	return s.Problems, true
}

// reportSettingsProblems writes a Warning Event on the controller
// ConfigMap for each of its problems, when they changed: a key Switchyard
// does not support, refuses or does not know is never ignored in silence.
func (w *writer) reportSettingsProblems(ctx context.Context, problems []bus.Problem) {
	if slices.Equal(w.settingsEvented, problems) {
		return
	}
	w.settingsEvented = problems
	ns, name, ok := strings.Cut(w.cfg.ConfigMap, "/")
	if !ok {
		return
	}
	for _, p := range problems {
		w.eventOn(ctx, corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: name}, p, "")
	}
}

// ingressName is "namespace/name" for a translator key of an Ingress's
// information; false for every other key.
func ingressName(key string) (string, bool) {
	kind, parts, err := bus.SplitKey(key)
	if err != nil || kind != bus.KindIngress || len(parts) != 2 {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// lastApplied reads the applier's last result from its stream: a replica
// that starts leading after the last apply must not wait for the next one.
func lastApplied(ctx context.Context, conn *bus.Conn) uint64 {
	stream, err := conn.EnsureStream(ctx, bus.StageApplier)
	if err != nil {
		return 0
	}
	msg, err := stream.GetLastMsgForSubject(ctx, bus.ApplyResultSubject)
	if err != nil {
		return 0
	}
	var res bus.ApplyResult
	if json.Unmarshal(msg.Data, &res) != nil || res.Error != "" || res.ReloadPending {
		return 0
	}
	return res.Generation
}

// writeStatus sets the addresses on every served Ingress not yet written,
// and clears them from Ingresses no longer served.
func (w *writer) writeStatus(ctx context.Context) {
	if w.cfg.LeaveStatus {
		return
	}
	addrs, err := w.addresses(ctx)
	if err != nil {
		w.log.Warn("status addresses", zap.Error(err))
		return
	}
	for key, info := range w.infos {
		if info.Rejected || w.written[key] {
			continue
		}
		if err := w.setStatus(ctx, info.Namespace, info.Name, addrs); err != nil {
			w.log.Warn("write Ingress status", zap.String("ingress", key), zap.Error(err))
			continue
		}
		w.written[key] = true
	}
	for key := range w.written {
		if info, ok := w.infos[key]; ok && !info.Rejected {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		if err := w.setStatus(ctx, ns, name, nil); err != nil && !apierrors.IsNotFound(err) {
			w.log.Warn("clear Ingress status", zap.String("ingress", key), zap.Error(err))
			continue
		}
		delete(w.written, key)
	}
}

func (w *writer) setStatus(ctx context.Context, ns, name string, addrs []networkingv1.IngressLoadBalancerIngress) error {
	ing, err := w.client.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if slices.EqualFunc(ing.Status.LoadBalancer.Ingress, addrs, func(a, b networkingv1.IngressLoadBalancerIngress) bool {
		return a.IP == b.IP && a.Hostname == b.Hostname
	}) {
		return nil
	}
	ing.Status.LoadBalancer.Ingress = addrs
	_, err = w.client.NetworkingV1().Ingresses(ns).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	return err
}

// addresses are --publish-status-address, or what --publish-service has.
func (w *writer) addresses(ctx context.Context) ([]networkingv1.IngressLoadBalancerIngress, error) {
	var names []string
	if w.cfg.PublishService != "" {
		ns, name, _ := strings.Cut(w.cfg.PublishService, "/")
		svc, err := w.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("--publish-service %s: %w", w.cfg.PublishService, err)
		}
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			names = append(names, lb.IP+lb.Hostname)
		}
		if len(names) == 0 {
			names = append(names, svc.Spec.ExternalIPs...)
		}
	} else {
		names = w.cfg.PublishAddresses
	}
	var out []networkingv1.IngressLoadBalancerIngress
	for _, n := range names {
		if _, err := netip.ParseAddr(n); err == nil {
			out = append(out, networkingv1.IngressLoadBalancerIngress{IP: n})
		} else if n != "" {
			out = append(out, networkingv1.IngressLoadBalancerIngress{Hostname: n})
		}
	}
	return out, nil
}

// reportProblems writes a Warning Event on each Ingress whose problems
// changed, one per problem, with a reason a person can act on.
func (w *writer) reportProblems(ctx context.Context) {
	for key, info := range w.infos {
		if slices.Equal(w.evented[key], info.Problems) {
			continue
		}
		w.evented[key] = info.Problems
		for _, p := range info.Problems {
			w.event(ctx, info, p)
		}
	}
	for key := range w.evented {
		if _, ok := w.infos[key]; !ok {
			delete(w.evented, key)
		}
	}
}

func (w *writer) event(ctx context.Context, info bus.IngressInfo, p bus.Problem) {
	prefix := ""
	if info.Rejected {
		prefix = "Ingress not served: "
	}
	w.eventOn(ctx, corev1.ObjectReference{Kind: "Ingress", APIVersion: "networking.k8s.io/v1",
		Namespace: info.Namespace, Name: info.Name}, p, prefix)
}

// eventOn writes a Warning Event about one problem of an object.
func (w *writer) eventOn(ctx context.Context, obj corev1.ObjectReference, p bus.Problem, prefix string) {
	now := metav1.NewTime(time.Now())
	source := w.cfg.ControllerName
	if source == "" {
		source = "switchyard"
	}
	msg := prefix + p.Field + ": " + p.Message
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: obj.Name + ".", Namespace: obj.Namespace},
		InvolvedObject: obj,
		Type:           corev1.EventTypeWarning, Reason: p.Reason, Message: msg,
		Source:         corev1.EventSource{Component: source},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "switchyard.dev/ingress-controller", ReportingInstance: w.cfg.Identity,
	}
	if _, err := w.client.CoreV1().Events(obj.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		w.log.Warn("write Event", zap.String("kind", obj.Kind), zap.String("object", obj.Namespace+"/"+obj.Name), zap.Error(err))
	}
}
