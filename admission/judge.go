package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/annotations"
	"switchyard.dev/switchyard/stages/translator"
)

// errNotSynced: the judge has not yet seen the watcher's table, so it
// cannot say what run would do.
var errNotSynced = errors.New("the webhook has not read the cluster's objects yet")

// judge mirrors what the translator and annotations stages hold, built from
// the watcher's table with the same code, and answers "what would run make
// of this Ingress?" by applying it, reading the verdict, and taking it back.
// Reviews are serialized: each leaves the mirror as it found it.
type judge struct {
	mu         sync.Mutex
	cfg        translator.Config
	newAnnot   func() *annotations.Annotator
	translator *translator.Translator
	annotator  *annotations.Annotator
	decoded    map[string]any // watcher key → object as last set
	// broken is set when a review could not be taken back; the mirror is
	// rebuilt from the next whole table before it judges again.
	broken  bool
	rebuild chan struct{}
	now     func() time.Time
}

func newJudge(cfg translator.Config, newAnnotator func() *annotations.Annotator) *judge {
	return &judge{cfg: cfg, newAnnot: newAnnotator, now: time.Now, rebuild: make(chan struct{}, 1)}
}

// sync applies a snapshot of the watcher's table to the mirror.
func (j *judge) sync(ctx context.Context, snap bus.Snapshot) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if snap.Full || j.translator == nil {
		j.translator, j.annotator, j.decoded, j.broken = translator.NewTranslator(j.cfg), j.newAnnot(), map[string]any{}, false
	}
	for _, key := range snap.Deletes {
		if old, ok := j.decoded[key]; ok {
			j.translator.Delete(old)
			delete(j.decoded, key)
		}
	}
	for key, data := range snap.Puts {
		obj, err := translator.DecodeEntry(key, data)
		if err != nil {
			continue // the translator stage reports it; here it is as if deleted
		}
		j.translator.Set(obj)
		j.decoded[key] = obj
	}
	if err := j.flush(ctx); err != nil {
		j.markBroken()
		return err
	}
	return nil
}

// flush hands what the translator changed to the annotator, as the
// annotations stage receives it over the bus.
func (j *judge) flush(ctx context.Context) error {
	delta := j.translator.Flush()
	changed := make(map[string][]byte, len(delta.Puts)+len(delta.Deletes))
	for _, key := range delta.Deletes {
		changed[key] = nil
	}
	for key, v := range delta.Puts {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		changed[key] = data
	}
	_, err := j.annotator.Update(ctx, changed)
	return err
}

// review says what run would make of ing as it stands in the request: nil
// when the Ingress is not this controller's.
func (j *judge) review(ctx context.Context, ing *networkingv1.Ingress) (*bus.IngressInfo, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.translator == nil || j.broken {
		return nil, errNotSynced
	}
	candidate := ing.DeepCopy()
	if candidate.CreationTimestamp.IsZero() {
		// A new Ingress is the newest: it must not win path conflicts
		// against the ones already served.
		candidate.CreationTimestamp = metav1.NewTime(j.now())
	}
	key := bus.ObjectKey(bus.ObjectIngress, candidate.Namespace, candidate.Name)
	old, existed := j.decoded[key]
	j.translator.Set(candidate)
	err := j.flush(ctx)
	var verdict *bus.IngressInfo
	if info, ours := j.annotator.Info(candidate.Namespace, candidate.Name); err == nil && ours {
		verdict = info
	}
	// Taken back with its own deadline: the request's may be spent, and a
	// mirror left with the candidate in it would judge wrongly afterwards.
	if existed {
		j.translator.Set(old)
	} else {
		j.translator.Delete(candidate)
	}
	undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if undoErr := j.flush(undoCtx); undoErr != nil {
		j.markBroken()
		return nil, fmt.Errorf("take the reviewed Ingress back: %w", undoErr)
	}
	if err != nil {
		return nil, err
	}
	return verdict, nil
}

// reset empties the mirror: the next snapshot builds it from scratch.
func (j *judge) reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.translator = nil
}

// markBroken stops judging and asks follow to start over; j.mu is held.
func (j *judge) markBroken() {
	j.broken = true
	select {
	case j.rebuild <- struct{}{}:
	default:
	}
}
