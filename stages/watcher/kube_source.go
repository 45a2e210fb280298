package watcher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"switchyard.dev/switchyard/bus"
)

// kubeSource watches the Kubernetes API with shared informers and sends
// the same object set the manifests source sends, so every later stage is
// source-agnostic. Secrets and ConfigMaps are sent only when an Ingress or
// the controller refers to them: the bus never carries the cluster's other
// secrets.
type kubeSource struct {
	client    kubernetes.Interface
	namespace string // "" watches every namespace
	configMap string // the controller ConfigMap, "namespace/name"
	// nsSelector, when set, keeps only objects of namespaces whose labels
	// match (--watch-namespace-selector).
	nsSelector labels.Selector
	// prefix is --annotations-prefix: Secrets named by its auth-secret
	// annotation are forwarded too.
	prefix string
	// defaultCert is --default-ssl-certificate, "namespace/name": that
	// Secret is forwarded too.
	defaultCert string
	// streamConfigMaps are the TCP and UDP services ConfigMaps,
	// "namespace/name", forwarded as the controller ConfigMap is.
	streamConfigMaps []string
	log              *zap.Logger

	cmFactory informers.SharedInformerFactory

	mu         sync.Mutex
	objects    map[string][]byte   // every watched object but Secrets and ConfigMaps
	secrets    map[string][]byte   // by "namespace/name"
	configs    map[string][]byte   // by "namespace/name"
	secretRefs map[string][]string // Ingress key → "namespace/name" of its TLS and annotation Secrets
	// configRefs: Ingress key → "namespace/name" of the ConfigMaps its
	// annotations name (custom-headers).
	configRefs map[string][]string
	nsMatch    map[string]bool // namespace → its labels match nsSelector
	// touched are the keys of the set desired builds that may differ
	// from the set it built last; touchedAll says any key may (the first
	// set, the controller ConfigMap, a namespace's labels: changes that
	// can move many keys at once). The watcher then compares only the
	// touched keys (objectSet.changed) instead of every key.
	touched    map[string]struct{}
	touchedAll bool
	dirty      chan struct{}
	spare      setPool // a set the watcher released, reused by desired
}

// newKubeSource returns a source on client. namespace limits the watch to
// one namespace ("" for all); configMap names the controller ConfigMap.
func newKubeSource(client kubernetes.Interface, namespace, configMap string, log *zap.Logger) *kubeSource {
	return &kubeSource{
		client: client, namespace: namespace, configMap: configMap, log: log,
		objects: map[string][]byte{}, secrets: map[string][]byte{}, configs: map[string][]byte{},
		secretRefs: map[string][]string{}, configRefs: map[string][]string{}, nsMatch: map[string]bool{}, dirty: make(chan struct{}, 1),
		spare: newSetPool(), touched: map[string]struct{}{}, touchedAll: true,
	}
}

// Release hands back a set Run sent, once the receiver holds no reference
// to it: the next set is built in its map.
func (s *kubeSource) Release(set map[string][]byte) { s.spare.put(set) }

// withNamespaceSelector keeps only objects of namespaces whose labels match.
func (s *kubeSource) withNamespaceSelector(sel labels.Selector) *kubeSource {
	s.nsSelector = sel
	return s
}

// withDefaultCertificate also forwards the Secret ref ("namespace/name"),
// the --default-ssl-certificate.
func (s *kubeSource) withDefaultCertificate(ref string) *kubeSource {
	s.defaultCert = ref
	return s
}

// withStreamConfigMaps also forwards these ConfigMaps ("namespace/name"),
// the TCP and UDP services.
func (s *kubeSource) withStreamConfigMaps(refs []string) *kubeSource {
	s.streamConfigMaps = refs
	return s
}

// withAnnotationsPrefix also forwards the Secrets that annotations under
// prefix name (bus.SecretAnnotations).
func (s *kubeSource) withAnnotationsPrefix(prefix string) *kubeSource {
	s.prefix = prefix
	return s
}

// kubeKind ties an informer to the bus kind token and the API group.
type kubeKind struct {
	token string
	gvk   schema.GroupVersionKind
}

var (
	kindIngress       = kubeKind{bus.ObjectIngress, networkingv1.SchemeGroupVersion.WithKind("Ingress")}
	kindIngressClass  = kubeKind{bus.ObjectIngressClass, networkingv1.SchemeGroupVersion.WithKind("IngressClass")}
	kindService       = kubeKind{bus.ObjectService, corev1.SchemeGroupVersion.WithKind("Service")}
	kindEndpointSlice = kubeKind{bus.ObjectEndpointSlice, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")}
	kindSecret        = kubeKind{bus.ObjectSecret, corev1.SchemeGroupVersion.WithKind("Secret")}
	kindConfigMap     = kubeKind{bus.ObjectConfigMap, corev1.SchemeGroupVersion.WithKind("ConfigMap")}
)

// Run starts the informers and sends the object set once they have synced
// and again after every change (debounced), until ctx ends. When the API
// server goes away, the informers retry and resync; the last set sent stays
// what the pipeline serves.
func (s *kubeSource) Run(ctx context.Context, out chan<- objectSet) error {
	nsFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithNamespace(s.namespace), informers.WithTransform(s.encodeForCache))
	clusterFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithTransform(s.encodeForCache))
	watch := []struct {
		informer cache.SharedIndexInformer
		kind     kubeKind
	}{
		{nsFactory.Networking().V1().Ingresses().Informer(), kindIngress},
		{clusterFactory.Networking().V1().IngressClasses().Informer(), kindIngressClass},
		{nsFactory.Core().V1().Services().Informer(), kindService},
		{nsFactory.Discovery().V1().EndpointSlices().Informer(), kindEndpointSlice},
		{nsFactory.Core().V1().Secrets().Informer(), kindSecret},
		{s.configMapFactory().Core().V1().ConfigMaps().Informer(), kindConfigMap},
	}
	// A handler's registration is synced once the handler has seen the
	// whole initial list; the informer's own HasSynced only says its store
	// is filled. Waiting on the former keeps a partial first set off the bus.
	var synced []cache.InformerSynced
	for _, w := range watch {
		kind := w.kind
		reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.set(kind, obj) },
			UpdateFunc: func(_, obj any) { s.set(kind, obj) },
			DeleteFunc: func(obj any) { s.remove(kind, obj) },
		})
		if err != nil {
			return fmt.Errorf("watch %s: %w", kind.gvk.Kind, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	if s.nsSelector != nil {
		nsInformer := clusterFactory.Core().V1().Namespaces().Informer()
		reg, err := nsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.setNamespace(obj, false) },
			UpdateFunc: func(_, obj any) { s.setNamespace(obj, false) },
			DeleteFunc: func(obj any) { s.setNamespace(obj, true) },
		})
		if err != nil {
			return fmt.Errorf("watch namespaces: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	nsFactory.Start(ctx.Done())
	clusterFactory.Start(ctx.Done())
	s.startConfigMapFactory(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // ctx ended
	}
	s.log.Info("kubernetes caches synced")
	return s.sendLoop(ctx, out)
}

// The controller ConfigMap may live outside --watch-namespace; watch its
// namespace too.
func (s *kubeSource) configMapFactory() informers.SharedInformerFactory {
	if s.cmFactory == nil {
		ns := s.namespace
		for _, ref := range append([]string{s.configMap}, s.streamConfigMaps...) {
			if refNS, _, _ := cutNamespacedName(ref); ref != "" && refNS != s.namespace {
				ns = "" // other namespaces: watch all ConfigMaps, send only ours
			}
		}
		s.cmFactory = informers.NewSharedInformerFactoryWithOptions(s.client, 0,
			informers.WithNamespace(ns), informers.WithTransform(s.encodeForCache))
	}
	return s.cmFactory
}

func (s *kubeSource) startConfigMapFactory(ctx context.Context) { s.cmFactory.Start(ctx.Done()) }

// sendLoop sends the desired set after every change, with the keys that
// may differ from the set sent before. A set equal to that one is not
// sent; the keys it touched are then equal too, so the next set's touched
// keys are again all that can differ from the one sent.
func (s *kubeSource) sendLoop(ctx context.Context, out chan<- objectSet) error {
	const debounce = 15 * time.Millisecond
	var last map[string][]byte
	send := func() {
		set, changed := s.desired()
		if last == nil {
			changed = nil // the first set: the receiver compares it whole
		} else if equalOn(set, last, changed, changed != nil) {
			s.spare.put(set) // never sent: the next set may be built in it
			return
		}
		last = set
		select {
		case out <- objectSet{objects: set, changed: changed}:
		case <-ctx.Done():
		}
	}
	send()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.dirty:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(debounce):
			}
			send()
		}
	}
}

// cachedObject is what the informers keep of a watched object: the JSON
// the bus carries (as the manifests source would publish it) and the little
// the source reads besides. Encoding objects as they arrive, in the
// informers' transform, holds the cluster's objects once, as bytes, instead
// of both typed in the informer caches and encoded here.
type cachedObject struct {
	namespace, name string
	data            []byte
	// secretRefs are the Secrets an Ingress names, "namespace/name": under
	// spec.tls, and in the annotations of bus.SecretAnnotations (of any
	// namespace: desired filters).
	secretRefs []string
	// configRefs are the ConfigMaps its annotations name (custom-headers),
	// of any namespace.
	configRefs []string
}

// GetObjectMeta gives the informers the namespace and name they key
// objects by. It is built on demand: a whole ObjectMeta per cached object
// would weigh more than most objects' JSON.
func (o *cachedObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: o.namespace, Name: o.name}
}

// GetObjectKind is empty: nothing reads the kind of a cached object.
func (o *cachedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject shares the contents, which are never changed.
func (o *cachedObject) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}

// encodeForCache is the informers' transform. Objects of the watched kinds
// become cachedObjects; Namespaces, an object that does not encode (set
// reports it) and an object already encoded pass through.
func (s *kubeSource) encodeForCache(obj any) (any, error) {
	kind, ok := watchedKind(obj)
	if !ok {
		return dropManagedFields(obj)
	}
	o := obj.(runtime.Object)
	meta, err := metaOf(o)
	if err != nil {
		return obj, nil
	}
	ns, name := meta.GetNamespace(), meta.GetName()
	var refs, configRefs []string
	if ing, ok := o.(*networkingv1.Ingress); ok {
		refs = tlsSecrets(ing)
		if s.prefix != "" {
			// Every namespace the annotations name: desired forwards one
			// of another namespace only while the controller ConfigMap
			// allows it, which can change without this Ingress changing.
			refs = append(refs, bus.AnnotationSecretRefs(ing.Namespace, ing.Annotations, s.prefix, true)...)
			configRefs = bus.AnnotationConfigMapRefs(ing.Namespace, ing.Annotations, s.prefix, true)
		}
	}
	data, err := canonicalJSON(kind, o)
	if err != nil {
		return dropManagedFields(obj)
	}
	return &cachedObject{namespace: ns, name: name, data: data, secretRefs: refs, configRefs: configRefs}, nil
}

// watchedKind is the kind of a typed object the source publishes.
func watchedKind(obj any) (kubeKind, bool) {
	switch obj.(type) {
	case *networkingv1.Ingress:
		return kindIngress, true
	case *networkingv1.IngressClass:
		return kindIngressClass, true
	case *corev1.Service:
		return kindService, true
	case *discoveryv1.EndpointSlice:
		return kindEndpointSlice, true
	case *corev1.Secret:
		return kindSecret, true
	case *corev1.ConfigMap:
		return kindConfigMap, true
	}
	return kubeKind{}, false
}

// set stores an object as the manifests source would publish it.
func (s *kubeSource) set(kind kubeKind, obj any) {
	o, ok := obj.(*cachedObject)
	if !ok {
		s.reportUnencoded(kind, obj)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case kindSecret:
		s.secrets[o.namespace+"/"+o.name] = o.data
		s.touch(bus.ObjectKey(bus.ObjectSecret, o.namespace, o.name))
	case kindConfigMap:
		s.configs[o.namespace+"/"+o.name] = o.data
		s.touchConfigMap(o.namespace, o.name)
	default:
		key := bus.ObjectKey(kind.token, o.namespace, o.name)
		s.objects[key] = o.data
		s.touch(key)
		if kind == kindIngress {
			// The Secrets and ConfigMaps it named and names: each may
			// join or leave the set.
			s.touchRefs(bus.ObjectSecret, s.secretRefs[key], o.secretRefs)
			s.touchRefs(bus.ObjectConfigMap, s.configRefs[key], o.configRefs)
			s.secretRefs[key] = o.secretRefs
			s.configRefs[key] = o.configRefs
		}
	}
	s.markDirty()
}

// reportUnencoded logs an object the transform could not encode: it is
// left out, and an earlier version of it stays published.
func (s *kubeSource) reportUnencoded(kind kubeKind, obj any) {
	o, meta, ok := unwrap(obj)
	if !ok {
		return
	}
	_, err := canonicalJSON(kind, o)
	if err == nil {
		err = fmt.Errorf("%T was not encoded by the informer transform", obj)
	}
	s.log.Warn("object left out", zap.String("kind", kind.gvk.Kind), zap.String("name", meta.GetNamespace()+"/"+meta.GetName()), zap.Error(err))
}

func tlsSecrets(ing *networkingv1.Ingress) []string {
	var refs []string
	for _, tls := range ing.Spec.TLS {
		if tls.SecretName != "" {
			refs = append(refs, ing.Namespace+"/"+tls.SecretName)
		}
	}
	return refs
}

func (s *kubeSource) remove(kind kubeKind, obj any) {
	_, meta, ok := unwrap(obj)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, name := meta.GetNamespace(), meta.GetName()
	switch kind {
	case kindSecret:
		delete(s.secrets, ns+"/"+name)
		s.touch(bus.ObjectKey(bus.ObjectSecret, ns, name))
	case kindConfigMap:
		delete(s.configs, ns+"/"+name)
		s.touchConfigMap(ns, name)
	default:
		key := bus.ObjectKey(kind.token, ns, name)
		delete(s.objects, key)
		s.touch(key)
		s.touchRefs(bus.ObjectSecret, s.secretRefs[key])
		s.touchRefs(bus.ObjectConfigMap, s.configRefs[key])
		delete(s.secretRefs, key)
		delete(s.configRefs, key)
	}
	s.markDirty()
}

func (s *kubeSource) setNamespace(obj any, deleted bool) {
	o, _, ok := unwrap(obj)
	ns, isNamespace := o.(*corev1.Namespace)
	if !ok || !isNamespace {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.nsMatch, ns.Name)
	} else {
		s.nsMatch[ns.Name] = s.nsSelector.Matches(labels.Set(ns.Labels))
	}
	// Every object of the namespace may join or leave the set.
	s.touchedAll = true
	s.markDirty()
}

// touch notes that key may differ from the set desired built last.
// Callers hold s.mu.
func (s *kubeSource) touch(key string) {
	if !s.touchedAll {
		s.touched[key] = struct{}{}
	}
}

// touchConfigMap touches a ConfigMap's key, and every key for the
// controller ConfigMap, which decides which other objects the set holds
// (the ConfigMaps and Secret it names, allow-cross-namespace-resources).
func (s *kubeSource) touchConfigMap(namespace, name string) {
	if namespace+"/"+name == s.configMap {
		s.touchedAll = true
		return
	}
	s.touch(bus.ObjectKey(bus.ObjectConfigMap, namespace, name))
}

// touchRefs touches the keys of the objects of kind an Ingress names
// ("namespace/name"), in each of lists.
func (s *kubeSource) touchRefs(kind string, lists ...[]string) {
	for _, refs := range lists {
		for _, ref := range refs {
			if ns, name, ok := cutNamespacedName(ref); ok {
				s.touch(bus.ObjectKey(kind, ns, name))
			}
		}
	}
}

// inScope says whether objects of namespace ns are served.
func (s *kubeSource) inScope(ns string) bool {
	return s.nsSelector == nil || ns == bus.ClusterScope || s.nsMatch[ns]
}

func (s *kubeSource) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// desired is the set to publish: every object, plus the Secrets the
// Ingresses name for TLS, the controller ConfigMap and the ConfigMaps of
// headers it names. changed are the keys that may differ from the set it
// built last (nil: any key may).
func (s *kubeSource) desired() (set map[string][]byte, changed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.touchedAll {
		changed = make([]string, 0, len(s.touched))
		for key := range s.touched {
			changed = append(changed, key)
		}
	}
	clear(s.touched)
	s.touchedAll = false
	set = s.spare.get(len(s.objects) + 16)
	maps.Copy(set, s.objects)
	if s.nsSelector != nil {
		for key := range set {
			if _, parts, err := bus.SplitKey(key); err != nil || len(parts) != 3 || !s.inScope(parts[1]) {
				delete(set, key)
			}
		}
	}
	controller, hasController := s.configs[s.configMap]
	cfg := readControllerConfig(controller)
	s.putIngressRefs(set, bus.ObjectSecret, s.secretRefs, s.secrets, cfg.crossNamespace)
	s.putIngressRefs(set, bus.ObjectConfigMap, s.configRefs, s.configs, cfg.crossNamespace)
	if data, ok := s.secrets[s.defaultCert]; ok && s.defaultCert != "" {
		ns, name, _ := cutNamespacedName(s.defaultCert)
		set[bus.ObjectKey(bus.ObjectSecret, ns, name)] = data
	}
	for _, ref := range s.streamConfigMaps {
		if data, ok := s.configs[ref]; ok {
			ns, name, _ := cutNamespacedName(ref)
			set[bus.ObjectKey(bus.ObjectConfigMap, ns, name)] = data
		}
	}
	if hasController {
		ns, name, _ := cutNamespacedName(s.configMap)
		set[bus.ObjectKey(bus.ObjectConfigMap, ns, name)] = controller
		// The ConfigMaps of headers (add-headers, proxy-set-headers) and
		// the Secret (ssl-dh-param) it names.
		putRefs(set, bus.ObjectConfigMap, cfg.configMaps, s.configs)
		putRefs(set, bus.ObjectSecret, cfg.secrets, s.secrets)
	}
	return set, changed
}

// putIngressRefs adds to set the objects of kind that objects holds and
// the Ingresses name (refs: Ingress key → "namespace/name"), in a served
// namespace. One of another namespace than its Ingress's is added only
// when crossNamespace (allow-cross-namespace-resources): the bus never
// carries a Secret an Ingress may not read.
func (s *kubeSource) putIngressRefs(set map[string][]byte, kind string, refs map[string][]string, objects map[string][]byte, crossNamespace bool) {
	for key, ids := range refs {
		_, parts, err := bus.SplitKey(key)
		if err != nil || len(parts) != 3 {
			continue
		}
		for _, id := range ids {
			ns, name, _ := cutNamespacedName(id)
			if data, ok := objects[id]; ok && s.inScope(ns) && bus.RefAllowed(parts[1], id, crossNamespace) {
				set[bus.ObjectKey(kind, ns, name)] = data
			}
		}
	}
}

// putRefs adds to set the objects of kind named by refs ("namespace/name")
// that objects holds.
func putRefs(set map[string][]byte, kind string, refs []string, objects map[string][]byte) {
	for _, ref := range refs {
		if data, ok := objects[ref]; ok {
			ns, name, _ := cutNamespacedName(ref)
			set[bus.ObjectKey(kind, ns, name)] = data
		}
	}
}

// canonicalJSON encodes an object as the manifests source does: the typed
// struct with apiVersion and kind, without the fields that change on every
// write (resourceVersion, managedFields) or that Switchyard itself writes
// (Ingress status), so our own status updates do not loop back. It clears
// those fields in o: the informers' transform may change the objects it
// is given, and keeps only the encoding.
func canonicalJSON(kind kubeKind, o runtime.Object) ([]byte, error) {
	o.GetObjectKind().SetGroupVersionKind(kind.gvk)
	meta, err := metaOf(o)
	if err != nil {
		return nil, err
	}
	meta.SetResourceVersion("")
	meta.SetManagedFields(nil)
	if ing, ok := o.(*networkingv1.Ingress); ok {
		ing.Status = networkingv1.IngressStatus{}
	}
	if svc, ok := o.(*corev1.Service); ok {
		svc.Status = corev1.ServiceStatus{}
	}
	return json.Marshal(o)
}

func cutNamespacedName(ref string) (namespace, name string, ok bool) {
	return strings.Cut(ref, "/")
}

// dropManagedFields keeps server-side apply bookkeeping out of the
// informer caches: nothing reads it, and at thousands of objects it is
// megabytes.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// unwrap returns an informer's object and its metadata, looking through the
// tombstone a missed deletion leaves.
func unwrap(obj any) (runtime.Object, metav1.Object, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, nil, false
	}
	meta, err := metaOf(o)
	if err != nil {
		return nil, nil, false
	}
	return o, meta, true
}

// metaOf is an object's metadata: its own, or a cachedObject's.
func metaOf(o runtime.Object) (metav1.Object, error) {
	m, err := apimeta.Accessor(o)
	if err != nil {
		return nil, fmt.Errorf("%T has no object metadata: %w", o, err)
	}
	return m, nil
}
