package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/watcher"
)

// Verdicts of check, per Ingress and per ConfigMap key.
const (
	verdictServed       = "served as asked"
	verdictDegraded     = "served degraded"
	verdictRejected     = "rejected"
	verdictImplemented  = "implemented"
	verdictKeyProblem   = "not as asked"
	checkDefaultClass   = "nginx"
	checkDefaultCtlrCls = "k8s.io/ingress-nginx"
)

// checkReport is what check prints: every Ingress in scope and every key
// of the controller ConfigMap, with the verdict run would reach.
type checkReport struct {
	// Unparsed lists the manifest documents run could not read (their
	// objects are not served), in --manifests mode.
	Unparsed  []checkedDocument `json:"unparsed,omitempty"`
	Ingresses []checkedIngress  `json:"ingresses"`
	ConfigMap *checkedMap       `json:"configMap,omitempty"`
	// Flags are the flags of ingress-nginx's controller given to check
	// (its args, say), each with what run does with it.
	Flags   []givenFlag  `json:"flags,omitempty"`
	Summary checkSummary `json:"summary"`
}

type checkedIngress struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Verdict   string        `json:"verdict"`
	Problems  []bus.Problem `json:"problems,omitempty"`
}

// checkedDocument is a manifest document that does not parse. It holds
// what manifest.DocumentError does, never the document's values (they
// may be Secret data).
type checkedDocument struct {
	Source    string `json:"source"` // "file.yaml:12"
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Field     string `json:"field,omitempty"`
	Verdict   string `json:"verdict"`
	Message   string `json:"message"`
}

type checkedMap struct {
	Name string       `json:"name"`
	Keys []checkedKey `json:"keys"`
}

type checkedKey struct {
	Key     string `json:"key"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type checkSummary struct {
	Unparsed       int `json:"unparsed"`
	Served         int `json:"served"`
	Degraded       int `json:"degraded"`
	Rejected       int `json:"rejected"`
	KeysAsAsked    int `json:"keysAsAsked"`
	KeysNotAsAsked int `json:"keysNotAsAsked"`
	// FlagsRefused are the flags given that run refuses to start with.
	FlagsRefused int `json:"flagsRefused,omitempty"`
}

func (r checkReport) allAsAsked() bool {
	return r.Summary.Unparsed == 0 && r.Summary.Degraded == 0 && r.Summary.Rejected == 0 && r.Summary.KeysNotAsAsked == 0 &&
		r.Summary.FlagsRefused == 0
}

// checkCommand answers "which of my Ingresses would Switchyard serve as
// ingress-nginx does?" for a live cluster or a manifests directory. It runs
// the same watcher, translator and annotation plugins as run, and stops
// there: no renderer, no NGINX, read access only.
func checkCommand(args []string) error {
	var o options
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	o.register(fs)
	// check looks at what ingress-nginx serves today, so its class is the
	// default here rather than Switchyard's.
	for name, value := range map[string]string{"ingress-class": checkDefaultClass, "controller-class": checkDefaultCtlrCls} {
		f := fs.Lookup(name)
		f.DefValue = value
		if err := f.Value.Set(value); err != nil {
			return err
		}
	}
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	output := fs.String("o", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("-o %q: want table or json", *output)
	}
	o.logLevel = "error"
	report, err := runCheck(&o, *timeout)
	if err != nil {
		return err
	}
	report.Flags = o.ingressNginx.givenFlags()
	for _, f := range report.Flags {
		if f.Fate == fateRefused {
			report.Summary.FlagsRefused++
		}
	}
	if *output == "json" {
		err = writeCheckJSON(os.Stdout, report)
	} else {
		err = writeCheckTable(os.Stdout, report)
	}
	if err != nil {
		return err
	}
	if !report.allAsAsked() {
		return fmt.Errorf("%d manifest document(s) unreadable, %d Ingress(es) rejected, %d served degraded, %d ConfigMap key(s) not as asked, %d flag(s) refused",
			report.Summary.Unparsed, report.Summary.Rejected, report.Summary.Degraded, report.Summary.KeysNotAsAsked, report.Summary.FlagsRefused)
	}
	return nil
}

func runCheck(o *options, timeout time.Duration) (checkReport, error) {
	var report checkReport
	stages := []string{bus.StageWatcher, bus.StageTranslator, bus.StageAnnotations}
	err := pipelineOnce(o, timeout, stages, func(annotated map[string][]byte) error {
		var err error
		report, err = checkIngresses(annotated)
		return err
	}, func(ctx context.Context, conn *bus.Conn) error {
		if o.configMap == "" {
			return nil
		}
		annotated, _, err := bus.ReadTable(ctx, conn, bus.StageAnnotations)
		if err != nil {
			return fmt.Errorf("read the settings: %w", err)
		}
		objects, _, err := bus.ReadTable(ctx, conn, bus.StageWatcher)
		if err != nil {
			return fmt.Errorf("read the ConfigMap: %w", err)
		}
		report.ConfigMap, err = checkConfigMap(o.configMap, objects, annotated[bus.SettingsKey])
		return err
	})
	if err != nil {
		return report, err
	}
	if o.manifests != "" {
		// The watcher only logs a document it cannot read (check logs
		// errors only, and a log line is easy to miss): read the directory
		// again for them, so that each is a rejected entry of the report.
		docs, err := watcher.ManifestErrors(o.manifests)
		if err != nil {
			return report, err
		}
		for _, d := range docs {
			report.Unparsed = append(report.Unparsed, checkedDocument{
				Source: d.File + ":" + strconv.Itoa(d.Line), Kind: d.Kind, Namespace: d.Namespace, Name: d.Name,
				Field: d.Field, Verdict: verdictRejected, Message: d.Message,
			})
		}
		report.Summary.Unparsed = len(docs)
	}
	for _, k := range mapKeys(report.ConfigMap) {
		if k.Verdict == verdictImplemented {
			report.Summary.KeysAsAsked++
		} else {
			report.Summary.KeysNotAsAsked++
		}
	}
	return report, nil
}

func mapKeys(m *checkedMap) []checkedKey {
	if m == nil {
		return nil
	}
	return m.Keys
}

// checkIngresses gives every Ingress of the annotations stage's table its
// verdict, sorted by namespace and name.
func checkIngresses(annotated map[string][]byte) (checkReport, error) {
	var r checkReport
	for _, key := range slices.Sorted(maps.Keys(annotated)) {
		kind, _, err := bus.SplitKey(key)
		if err != nil {
			return r, err
		}
		if kind != bus.KindIngress {
			continue
		}
		var info bus.IngressInfo
		if err := json.Unmarshal(annotated[key], &info); err != nil {
			return r, fmt.Errorf("decode %s: %w", key, err)
		}
		c := checkedIngress{Namespace: info.Namespace, Name: info.Name, Verdict: verdictServed, Problems: info.Problems}
		switch {
		case info.Rejected:
			c.Verdict = verdictRejected
			r.Summary.Rejected++
		case len(info.Problems) > 0:
			c.Verdict = verdictDegraded
			r.Summary.Degraded++
		default:
			r.Summary.Served++
		}
		r.Ingresses = append(r.Ingresses, c)
	}
	return r, nil
}

// checkConfigMap lists every key of the controller ConfigMap: implemented
// unless the translator reported a Problem for it. Values are never
// printed; a Problem's message already quotes them cut short.
func checkConfigMap(name string, objects map[string][]byte, settingsJSON []byte) (*checkedMap, error) {
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		return nil, fmt.Errorf("--configmap %q: want NAMESPACE/NAME", name)
	}
	raw, found := objects[bus.ObjectKey(bus.ObjectConfigMap, ns, n)]
	if !found {
		return nil, fmt.Errorf("ConfigMap %s not found", name)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("decode ConfigMap %s: %w", name, err)
	}
	var settings bus.Settings
	if settingsJSON != nil {
		if err := json.Unmarshal(settingsJSON, &settings); err != nil {
			return nil, fmt.Errorf("decode the settings: %w", err)
		}
	}
	problems := map[string]bus.Problem{}
	for _, p := range settings.Problems {
		problems[strings.TrimPrefix(p.Field, "data.")] = p
	}
	m := &checkedMap{Name: name}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		k := checkedKey{Key: key, Verdict: verdictImplemented}
		if p, bad := problems[key]; bad {
			k.Verdict, k.Reason, k.Message = verdictKeyProblem, p.Reason, p.Message
		}
		m.Keys = append(m.Keys, k)
	}
	return m, nil
}

func writeCheckJSON(w io.Writer, r checkReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeCheckTable prints one line per Ingress and per ConfigMap key,
// verdict first so the columns line up, each Problem indented under its
// line, then the summary.
func writeCheckTable(out io.Writer, r checkReport) error {
	var b strings.Builder
	for _, d := range r.Unparsed {
		what := d.Kind
		if what == "" {
			what = "document"
		}
		if d.Name != "" {
			what += " " + path.Join(d.Namespace, d.Name)
		}
		fmt.Fprintf(&b, "%-16s manifest %s %s\n    %s\n", d.Verdict, d.Source, what, d.Message)
	}
	for _, ing := range r.Ingresses {
		fmt.Fprintf(&b, "%-16s ingress %s/%s\n", ing.Verdict, ing.Namespace, ing.Name)
		for _, p := range ing.Problems {
			fmt.Fprintf(&b, "    %s: %s: %s\n", p.Field, p.Reason, p.Message)
		}
	}
	if r.ConfigMap != nil {
		for _, k := range r.ConfigMap.Keys {
			fmt.Fprintf(&b, "%-16s configmap %s key %s\n", k.Verdict, r.ConfigMap.Name, k.Key)
			if k.Message != "" {
				fmt.Fprintf(&b, "    %s: %s\n", k.Reason, k.Message)
			}
		}
	}
	for _, f := range r.Flags {
		fmt.Fprintf(&b, "%-16s flag --%s=%s\n    %s\n", f.Fate, f.Flag, f.Value, f.Why)
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d Ingress(es): %d served as asked, %d served degraded, %d rejected", s.Served+s.Degraded+s.Rejected, s.Served, s.Degraded, s.Rejected)
	if len(r.Flags) > 0 {
		fmt.Fprintf(&b, "; %d of ingress-nginx's flags given, %d refused", len(r.Flags), s.FlagsRefused)
	}
	if r.ConfigMap != nil {
		fmt.Fprintf(&b, "; ConfigMap keys: %d implemented, %d not as asked", s.KeysAsAsked, s.KeysNotAsAsked)
	}
	if s.Unparsed > 0 {
		fmt.Fprintf(&b, "; %d manifest document(s) not read, their objects not served", s.Unparsed)
	}
	b.WriteString("\n")
	if s.Served+s.Degraded+s.Rejected == 0 && s.Unparsed == 0 {
		b.WriteString("No Ingress is in scope: an Ingress counts when its ingressClassName names an IngressClass of --controller-class,\n" +
			"or its kubernetes.io/ingress.class annotation is --ingress-class; a manifests directory needs its IngressClass objects too.\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}
