package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// A mixedObject is one Ingress of the property test: a good one must be
// served by its own backend, a bad one must be reported (a Problem, or
// NGINX's refusal traced to it) and never stop a good one.
type mixedObject struct {
	name, host, yaml string
	pod              string // good: the pod that must answer
	path             string // good: its one (ImplementationSpecific) path
	// reported is how a bad one is reported: "problem" (an ingress
	// problem log line) or "refusal" (the applier traced NGINX's refusal
	// to it).
	reported string
	kind     string // what makes it bad, for the failure message
}

// refusedPrefix names the Ingresses the renderer is told (by its test-only
// hook) to give a directive NGINX refuses: a refusal from any cause.
const refusedPrefix = "refused-"

// badKinds make a bad Ingress of each kind the issue lists; i keeps names
// and hosts apart, and good is a good host whose path a conflict takes.
var badKinds = []func(r *rand.Rand, i int, good mixedObject) mixedObject{
	// A use-regex path NGINX's PCRE refuses, or one that could backtrack
	// catastrophically.
	func(r *rand.Rand, i int, _ mixedObject) mixedObject {
		paths := []string{`/[[:alpha:]-z]`, `/^*`, `/[::]`, `/(a+)+b`, `/(.*)*x`, `/.*.*.*b$`, `/x{1,5000}`}
		name, host, path := fmt.Sprintf("regex-%d", i), fmt.Sprintf("regex-%d.test", i), paths[r.IntN(len(paths))]
		return mixedObject{name: name, host: host, reported: "problem", kind: "regex " + path,
			yaml: harness.AnnotatedIngressYAML("default", name, host, map[string]string{ann + "use-regex": "true"},
				harness.Path{Path: path, Type: "ImplementationSpecific", Service: "echo-a"})}
	},
	// A host name that folds to ASCII only after Unicode case folding.
	func(r *rand.Rand, i int, _ mixedObject) mixedObject {
		hosts := []string{"uni\u0130-%d.test", "\u212aelvin-%d.test", "\uff41-%d.test"}
		name := fmt.Sprintf("unicode-%d", i)
		host := fmt.Sprintf(hosts[r.IntN(len(hosts))], i)
		return mixedObject{name: name, host: host, reported: "problem", kind: "host " + host,
			yaml: harness.IngressYAML("default", name, host, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})}
	},
	// A newer Ingress for a good one's host and path, with another backend.
	func(_ *rand.Rand, i int, good mixedObject) mixedObject {
		name := fmt.Sprintf("conflict-%d", i)
		yaml := harness.IngressYAML("default", name, good.host, harness.Path{Path: good.path, Type: "ImplementationSpecific", Service: "echo-c"})
		yaml = strings.Replace(yaml, "namespace: default}", `namespace: default, creationTimestamp: "2026-06-01T00:00:00Z"}`, 1)
		return mixedObject{name: name, host: good.host, reported: "problem", kind: "conflict with " + good.name, yaml: yaml}
	},
	// An Ingress over the bus's message limit (etcd takes up to 1.5 MiB).
	func(_ *rand.Rand, i int, _ mixedObject) mixedObject {
		name, host := fmt.Sprintf("huge-%d", i), fmt.Sprintf("huge-%d.test", i)
		return mixedObject{name: name, host: host, reported: "problem", kind: "1.2 MB Ingress",
			yaml: harness.AnnotatedIngressYAML("default", name, host, map[string]string{"example.com/blob": strings.Repeat("x", 1200*1024)},
				harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})}
	},
	// An Ingress whose rendered configuration NGINX refuses.
	func(_ *rand.Rand, i int, _ mixedObject) mixedObject {
		name, host := fmt.Sprintf("%s%d", refusedPrefix, i), fmt.Sprintf("refused-%d.test", i)
		return mixedObject{name: name, host: host, reported: "refusal", kind: "refused by nginx",
			yaml: harness.IngressYAML("default", name, host, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})}
	},
}

// goodObject is an ordinary Ingress, some with annotations users set.
func goodObject(r *rand.Rand, i int) mixedObject {
	name, host := fmt.Sprintf("good-%d", i), fmt.Sprintf("good-%d.test", i)
	svc, pod := "echo-a", "a-1"
	if r.IntN(2) == 0 {
		svc, pod = "echo-b", "b-1"
	}
	annotations := []map[string]string{
		nil,
		{ann + "ssl-redirect": "false"},
		{ann + "load-balance": "ewma"},
		{ann + "use-regex": "true"},
	}[r.IntN(4)]
	path := "/"
	if annotations[ann+"use-regex"] == "true" {
		path = "/.*"
	}
	return mixedObject{name: name, host: host, pod: pod, path: path,
		yaml: harness.AnnotatedIngressYAML("default", name, host, annotations, harness.Path{Path: path, Type: "ImplementationSpecific", Service: svc})}
}

// mixedBatch is n good Ingresses and m bad ones of random kinds.
func mixedBatch(r *rand.Rand, first, n, m int) (good, bad []mixedObject) {
	for i := range n {
		good = append(good, goodObject(r, first+i))
	}
	for i := range m {
		kind := badKinds[r.IntN(len(badKinds))]
		bad = append(bad, kind(r, first+i, good[r.IntN(len(good))]))
	}
	return good, bad
}

// TestMixedBadObjectsNeverTakeGoodOnesDown mixes random bad objects
// (regexes NGINX refuses or that backtrack, Unicode hosts, conflicting
// hosts, Ingresses over the bus's message limit, an Ingress NGINX refuses, ConfigMap values the parser or NGINX
// refuses) with good ones, present at start and added while running:
// every good Ingress is served by its own backend, every bad one is
// reported. SWITCHYARD_MIXED_SEED replays a run.
func TestMixedBadObjectsNeverTakeGoodOnesDown(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SWITCHYARD_MIXED_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (SWITCHYARD_MIXED_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))

	// Names the refused kind may take: the hook is read at start.
	var refused []string
	for i := range 40 {
		refused = append(refused, fmt.Sprintf("default/%s%d", refusedPrefix, i))
	}
	t.Setenv("SWITCHYARD_TEST_REFUSE_INGRESS", strings.Join(refused, ","))

	e := newBackends(t)
	portC := harness.StartEcho(t, harness.Binary(t), "echo-c", "c-1")
	e.write("service-c.yaml", harness.ServiceYAML("default", "echo-c", portC))

	settings := map[string]string{"proxy-read-timeout": "60"}
	// Values NGINX refuses (traced to their key) and one the parser
	// refuses (reported at once); each falls back to its default.
	badSettings := []struct{ key, value, reported string }{
		{"log-format-upstream", "$remote_addr $no_such_var", "refusal"},
		{"ssl-ciphers", "NOPE-CIPHER", "refusal"},
		{"proxy-body-size", "lots", "problem"},
	}
	var chosen []int
	for i, b := range badSettings {
		if r.IntN(2) == 0 {
			settings[b.key] = b.value
			chosen = append(chosen, i)
		}
	}
	e.write("config.yaml", configMapYAML(settings))

	good, bad := mixedBatch(r, 0, 5, 5)
	writeMixed(e, good, bad)
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	checkMixed(t, e, good, bad, "present at start")
	harness.WaitFor(t, changeTimeout, "every bad ConfigMap value reported", func() error {
		out := e.sy.Output.String()
		for _, i := range chosen {
			b := badSettings[i]
			switch {
			case b.reported == "refusal" && refusalsLogged(out)["configmap "+b.key] == "":
				return fmt.Errorf("%s: no refusal logged", b.key)
			case b.reported == "problem" && !strings.Contains(out, `"field": "data.`+b.key+`"`):
				return fmt.Errorf("%s: no ConfigMap problem logged", b.key)
			}
		}
		return nil
	})

	moreGood, moreBad := mixedBatch(r, 10, 4, 5)
	writeMixed(e, moreGood, moreBad)
	checkMixed(t, e, append(good, moreGood...), append(bad, moreBad...), "added while running")
}

func writeMixed(e *env, objects ...[]mixedObject) {
	for _, list := range objects {
		for _, o := range list {
			e.write(o.name+".yaml", o.yaml)
		}
	}
}

func checkMixed(t *testing.T, e *env, good, bad []mixedObject, phase string) {
	t.Helper()
	for _, g := range good {
		e.eventually(g.host, "/", phase+": "+g.name+" served by "+g.pod, servedBy(g.pod))
	}
	harness.WaitFor(t, changeTimeout, phase+": every bad object reported", func() error {
		problems := problemsLogged(t, e.sy.Output.String())
		refusals := refusalsLogged(e.sy.Output.String())
		for _, b := range bad {
			key := "default/" + b.name
			switch {
			case b.reported == "problem" && len(problems[key]) == 0:
				return fmt.Errorf("%s (%s): no problem logged", b.name, b.kind)
			case b.reported == "refusal" && refusals["ingress "+key] == "":
				return fmt.Errorf("%s (%s): no refusal logged; refusals: %v", b.name, b.kind, refusals)
			}
		}
		return nil
	})
	// Reported is not enough: a bad Ingress's own host is not served by
	// what it asked for (a conflict's host stays the good one's).
	for _, b := range bad {
		if b.reported == "refusal" {
			e.eventually(b.host, "/", phase+": "+b.name+" left out", status(404))
		}
	}
}
