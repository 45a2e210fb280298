package annotations

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
)

// The fan-out: one batch per plugin per change, all plugins at once, and
// their answers folded into each Ingress's result; a plugin that fails
// makes its Ingresses fail closed.

// callAll sends each plugin its batch, all plugins at once, and folds the
// answers into results. A plugin that fails fails its Ingresses closed.
func (a *Annotator) callAll(ctx context.Context, batches map[*hosted][]plugins.Ingress, results map[string]*ingressResult) {
	type answer struct {
		p       *hosted
		results []plugins.Result
		err     error
	}
	answers := make(chan answer, len(batches))
	var wg sync.WaitGroup
	for p, batch := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.call(ctx, p, batch)
			answers <- answer{p, res, err}
		}()
	}
	wg.Wait()
	close(answers)
	for ans := range answers {
		if ans.err != nil {
			a.failClosed(ans.p, batches[ans.p], ans.err, results)
			continue
		}
		a.fold(ans.p, batches[ans.p], ans.results, results)
	}
}

func (a *Annotator) failClosed(p *hosted, batch []plugins.Ingress, err error, results map[string]*ingressResult) {
	if a.failed[p] == nil {
		a.failed[p] = map[string]bool{}
	}
	for _, in := range batch {
		id := in.Namespace + "/" + in.Name
		a.failed[p][id] = true
		res := results[id]
		res.features.Deny = &bus.Deny{Status: 503, Reason: "plugin " + p.desc.Name + " unavailable"}
		res.problems = append(res.problems, bus.Problem{Field: "metadata.annotations", Reason: ReasonPluginUnavailable,
			Message: fmt.Sprintf("plugin %s did not answer (%v); the Ingress answers 503 until it does", p.desc.Name, err)})
	}
}

// fold merges one plugin's results. An Ingress the plugin was asked about
// but did not answer fails closed like a failed call.
func (a *Annotator) fold(p *hosted, batch []plugins.Ingress, answers []plugins.Result, results map[string]*ingressResult) {
	asked := map[string]bool{}
	for _, in := range batch {
		asked[in.Namespace+"/"+in.Name] = true
	}
	for _, r := range answers {
		id := r.Namespace + "/" + r.Name
		if !asked[id] {
			continue
		}
		delete(asked, id)
		res := results[id]
		for _, e := range r.Errors {
			p := bus.Problem{Field: "metadata.annotations[" + a.displayKey(e.Key) + "]", Reason: ReasonInvalidAnnotation,
				Message: fmt.Sprintf("annotation %s: %s", a.displayKey(e.Key), e.Message)}
			if e.Warning {
				p.Reason = ReasonAnnotationWarning
				res.problems = append(res.problems, p)
			} else {
				res.reject(p)
			}
		}
		if err := mergeFeatures(res.features, &r.Features); err != nil {
			res.reject(bus.Problem{Field: "metadata.annotations", Reason: ReasonInvalidAnnotation, Message: err.Error()})
		}
	}
	for id := range asked {
		a.failClosed(p, []plugins.Ingress{{Namespace: strings.Split(id, "/")[0], Name: strings.Split(id, "/")[1]}},
			fmt.Errorf("no result for the Ingress"), results)
	}
}
