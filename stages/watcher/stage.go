// Package watcher is the pipeline's source: it reads Kubernetes objects
// (from a manifests directory, or later the API server) and publishes each
// one under its own key, with a new generation for every change.
package watcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/status"
)

// Config of the watcher. At least one source must be set; with both, the
// object sets are merged and the manifests win a key both define.
type Config struct {
	// ManifestsDir is a directory of YAML files of Kubernetes objects.
	ManifestsDir string
	// Kube is a client of the Kubernetes API; nil for none.
	Kube kubernetes.Interface
	// WatchNamespace limits the API watch to one namespace ("" for all).
	WatchNamespace string
	// NamespaceSelector, a label selector, serves only the namespaces
	// whose labels match ("" for all).
	NamespaceSelector string
	// ConfigMap is the controller ConfigMap, "namespace/name".
	ConfigMap string
	// StreamConfigMaps are --tcp-services-configmap and
	// --udp-services-configmap, "namespace/name": published as the
	// controller ConfigMap is.
	StreamConfigMaps []string
	// DefaultSSLCertificate is --default-ssl-certificate, "namespace/name":
	// its Secret is published though no Ingress names it.
	DefaultSSLCertificate string
	// AnnotationsPrefix is --annotations-prefix: the Secrets its
	// auth-secret annotations name are forwarded.
	AnnotationsPrefix string
	// Status, when Kube is set, writes Ingress status and Events.
	Status status.Config
}

// Stage runs the watcher.
type Stage struct {
	conn *bus.Conn
	cfg  Config
	log  *zap.Logger
}

// New returns the watcher stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log}
}

// objectSet is what a source sends: its whole object set, and the keys
// whose values may differ from the set it sent before (in any order,
// repeats allowed), or nil when it cannot say (its first set, a full
// rescan). Every other key holds the same bytes as before, so the watcher
// compares only these with what it published.
type objectSet struct {
	objects map[string][]byte
	changed []string
}

// source sends its whole object set at start and after every change.
type source interface {
	Run(ctx context.Context, out chan<- objectSet) error
	// Release hands back a set Run sent once the watcher holds no
	// reference to it, for the source to build a later set in.
	Release(set map[string][]byte)
}

// Run publishes the object set after every change until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	sources := map[string]source{}
	if s.cfg.Kube != nil {
		src := newKubeSource(s.cfg.Kube, s.cfg.WatchNamespace, s.cfg.ConfigMap, s.log).withAnnotationsPrefix(s.cfg.AnnotationsPrefix).
			withDefaultCertificate(s.cfg.DefaultSSLCertificate).withStreamConfigMaps(s.cfg.StreamConfigMaps)
		if s.cfg.NamespaceSelector != "" {
			sel, err := labels.Parse(s.cfg.NamespaceSelector)
			if err != nil {
				return fmt.Errorf("watcher: namespace selector %q: %w", s.cfg.NamespaceSelector, err)
			}
			src.withNamespaceSelector(sel)
		}
		sources["kubernetes"] = src
	}
	if s.cfg.ManifestsDir != "" {
		sources["manifests"] = newManifestSource(s.cfg.ManifestsDir, s.log)
	}
	if len(sources) == 0 {
		return fmt.Errorf("watcher: no source configured (--manifests DIR or --kubeconfig)")
	}
	writer := bus.NewWriter(s.conn, bus.StageWatcher)
	generation, err := writer.Load(ctx)
	if err != nil {
		return fmt.Errorf("watcher: %w", err)
	}
	type update struct {
		source string
		objectSet
	}
	updates := make(chan update, len(sources))
	sourceErr := make(chan error, len(sources)+1)
	for name, src := range sources {
		out := make(chan objectSet, 1)
		go func() { sourceErr <- src.Run(ctx, out) }()
		go func() {
			for set := range channelUntil(ctx, out) {
				updates <- update{name, set}
			}
		}()
	}
	if s.cfg.Kube != nil {
		go func() { sourceErr <- status.Run(ctx, s.conn, s.cfg.Kube, s.cfg.Status, s.log.Named("status")) }()
	}
	latest := map[string]map[string][]byte{}
	tooLarge := map[string]int{}    // Ingresses over the bus limit, as logged
	var published map[string][]byte // the last set published
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-sourceErr:
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("watcher: %w", err)
			}
		case u := <-updates:
			previous := latest[u.source]
			latest[u.source] = u.objects
			if len(latest) < len(sources) {
				sources[u.source].Release(previous)
				continue // publish once every source has its first set
			}
			generation++
			objects := standIns(merge(latest["kubernetes"], latest["manifests"]), tooLarge, s.log)
			// With one source, what it published last is the source's
			// previous set (stand-ins are the same for the same bytes), so
			// the keys it says changed are all that can differ.
			var hint []string
			if len(sources) == 1 {
				hint = u.changed
			}
			meta := bus.Meta{Generation: generation, Trace: bus.NewTrace(), Ingest: time.Now()}
			// The writer retries until the bus takes the set; an error
			// names objects left out, and the others are published.
			changed, err := publishObjects(ctx, writer, meta, published, objects, hint)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				s.log.Error("objects left out", zap.Uint64("generation", generation), zap.Error(err))
			}
			// The root span of the change's trace.
			bus.RecordStageSpan(ctx, bus.StageWatcher, bus.Meta{Generation: generation}, meta.Trace, meta.Ingest, err,
				attribute.Int("switchyard.changed_keys", changed), attribute.Int("switchyard.objects", len(objects)))
			published = objects
			// The source's previous set is no longer read here: with one
			// source it was the last published set, which the diff above
			// was the last to read.
			sources[u.source].Release(previous)
			s.log.Info("objects published", zap.Uint64("generation", generation),
				zap.Int("objects", len(objects)), zap.Int("changed", changed))
		}
	}
}

// publishObjects publishes an object set. The first is published whole, so
// that keys an earlier run left in the table are deleted. Every later one is
// compared with the last set here (objectChanges), where an unchanged object
// shares its bytes with it and compares at no cost, so the writer digests
// only what changed rather than every object on every change.
func publishObjects(ctx context.Context, w *bus.Writer, meta bus.Meta, last, objects map[string][]byte, hint []string) (int, error) {
	if last == nil {
		return w.Publish(ctx, meta, objects)
	}
	puts, deletes := objectChanges(last, objects, hint)
	changed, err := w.PublishDelta(ctx, meta, puts, deletes)
	if errors.Is(err, bus.ErrTableLost) {
		// The stream lost the table: the changes alone would not make it
		// whole again.
		return w.Publish(ctx, meta, objects)
	}
	return changed, err
}

// objectChanges are the puts and deletes (sorted) that turn last into
// objects. With a hint, the keys that may differ, only those are compared:
// at 10,000 Ingresses comparing every key was a fifth of what an endpoint
// change cost.
func objectChanges(last, objects map[string][]byte, hint []string) (puts map[string][]byte, deletes []string) {
	puts = map[string][]byte{}
	compare := func(key string) {
		data, ok := objects[key]
		old, had := last[key]
		switch {
		case ok && (!had || !bytes.Equal(old, data)):
			puts[key] = data
		case !ok && had:
			deletes = append(deletes, key)
		}
	}
	if hint != nil {
		for _, key := range hint {
			compare(key)
		}
	} else {
		for key := range objects {
			compare(key)
		}
		for key := range last {
			if _, ok := objects[key]; !ok {
				deletes = append(deletes, key)
			}
		}
	}
	slices.Sort(deletes)
	return puts, slices.Compact(deletes)
}

// merge unions object sets; a later set wins a key both hold. With one
// source, its set is returned as is: sets are never changed once sent, and
// a copy of tens of thousands of keys is not free.
func merge(sets ...map[string][]byte) map[string][]byte {
	if len(sets) == 2 && sets[0] == nil {
		return sets[1]
	}
	if len(sets) == 2 && sets[1] == nil {
		return sets[0]
	}
	out := map[string][]byte{}
	for _, set := range sets {
		maps.Copy(out, set)
	}
	return out
}

// channelUntil forwards c until ctx ends.
func channelUntil[T any](ctx context.Context, c <-chan T) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case v := <-c:
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
