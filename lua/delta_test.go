package lua_test

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests of POST /configuration/backends/delta (configuration.lua and
// util/backend_store.lua) and of workers applying deltas (balancer.lua),
// run by TestDataPlane (dataplane_test.go).

type delta struct {
	Base     int       `json:"base"`
	Backends []backend `json:"backends,omitempty"`
	Removed  []string  `json:"removed,omitempty"`
}

var versionRE = regexp.MustCompile(`^backends version (\d+)\n$`)

// postFull posts every backend and returns the stored version.
func (dp *dataPlane) postFull(backends ...backend) int {
	dp.t.Helper()
	body, err := json.Marshal(backends)
	must(dp.t, err)
	status, text := dp.configRequest("POST", "/configuration/backends", string(body))
	return dp.version(status, text)
}

func (dp *dataPlane) version(status int, text string) int {
	dp.t.Helper()
	m := versionRE.FindStringSubmatch(text)
	if status != 201 || m == nil {
		dp.t.Fatalf("POST backends: %d %q, want 201 with a version", status, text)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

func (dp *dataPlane) postDelta(d delta) (int, string) {
	dp.t.Helper()
	body, err := json.Marshal(d)
	must(dp.t, err)
	return dp.configRequest("POST", "/configuration/backends/delta", string(body))
}

// storedNames returns the names GET /configuration/backends answers.
func (dp *dataPlane) storedNames() []string {
	dp.t.Helper()
	status, text := dp.configRequest("GET", "/configuration/backends", "")
	var list []struct {
		Name string `json:"name"`
	}
	if status != 200 || json.Unmarshal([]byte(text), &list) != nil {
		dp.t.Fatalf("GET backends: %d %q", status, text)
	}
	var names []string
	for _, b := range list {
		names = append(names, b.Name)
	}
	return names
}

func (dp *dataPlane) expect(path, name, id string, status int) {
	dp.t.Helper()
	r := dp.get(path, name)
	if r.status != status || r.backend != id {
		dp.t.Errorf("GET via %q: %d from %q, want %d from %q", name, r.status, r.backend, status, id)
	}
}

// Add, change and remove in one delta; the backends it does not name stay,
// and each worker reloads only the names the delta carries.
func (dp *dataPlane) testDeltaApply(t *testing.T) {
	eps, ids := startBackends(t, "delta", 4)
	a := backend{Name: "delta-a", Endpoints: eps[0:1]}
	b := backend{Name: "delta-b", Endpoints: eps[1:2]}
	keep := backend{Name: "delta-keep", Endpoints: eps[3:4]}
	v := dp.postFull(a, b, keep)
	dp.expect("/", "delta-a", ids[0], 200)
	// A worker still before this full post would load everything.
	dp.waitLoaded(t, v, regexp.MustCompile(`in use\)`))
	// A worker builds a backend when a request first asks for it, not
	// every published one: only delta-a was asked for.
	b.Endpoints = eps[2:3]
	v = dp.version(dp.postDelta(delta{Base: v, Backends: []backend{b}}))
	dp.waitLoaded(t, v, regexp.MustCompile(`\(1 changed, [01] in use\)`))

	a.Endpoints = eps[2:3]
	c := backend{Name: "delta-c", Endpoints: eps[1:2]}
	status, text := dp.postDelta(delta{Base: v, Backends: []backend{a, c}, Removed: []string{"delta-b"}})
	next := dp.version(status, text)
	if next != v+1 {
		t.Errorf("delta on version %d stored version %d, want %d", v, next, v+1)
	}
	// Every request after the 201 sees the delta, on every worker.
	for range 10 {
		dp.expect("/", "delta-a", ids[2], 200)
		dp.expect("/", "delta-c", ids[1], 200)
		dp.expect("/", "delta-keep", ids[3], 200)
		dp.expect("/", "delta-b", "", 503)
	}
	if got, want := strings.Join(dp.storedNames(), ","), "delta-a,delta-c,delta-keep"; got != want {
		t.Errorf("stored after the delta: %s, want %s", got, want)
	}
	dp.waitLoaded(t, next, regexp.MustCompile(`\(3 changed, [0-3] in use\)`))

	// A delta of one backend: each worker reads that one alone.
	a.Endpoints = eps[0:1]
	next = dp.version(dp.postDelta(delta{Base: next, Backends: []backend{a}}))
	dp.expect("/", "delta-a", ids[0], 200)
	dp.waitLoaded(t, next, regexp.MustCompile(`\(1 changed, [0-3] in use\)`))

	// A full post stores and lists only what differs from the stored
	// backends: the workers reload that one alone too.
	keep.Endpoints = eps[0:1]
	next = dp.postFull(a, c, keep)
	dp.expect("/", "delta-keep", ids[0], 200)
	dp.waitLoaded(t, next, regexp.MustCompile(`\(1 changed, [0-3] in use\)`))
}

// waitLoaded waits until every worker logged loading version, the log line
// matching detail.
func (dp *dataPlane) waitLoaded(t *testing.T, version int, detail *regexp.Regexp) {
	t.Helper()
	lineRE := regexp.MustCompile(fmt.Sprintf(`\[notice\] (\d+)#\d+: .*loaded backends version %d (.*)`, version))
	deadline := time.Now().Add(5 * time.Second)
	for {
		loaded := map[string]string{}
		for _, m := range lineRE.FindAllStringSubmatch(dp.errorLog(), -1) {
			loaded[m[1]] = m[2]
		}
		if len(loaded) == len(dp.workers()) {
			for worker, text := range loaded {
				if !detail.MatchString(text) {
					t.Errorf("worker %s loaded version %d as %q, want %s", worker, version, text, detail)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers that loaded version %d: %v", version, loaded)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A delta made against another version than the stored one, or removing a
// backend that is not stored, is refused with 412 and changes nothing.
func (dp *dataPlane) testDeltaStale(t *testing.T) {
	eps, ids := startBackends(t, "stale", 2)
	s := backend{Name: "stale-s", Endpoints: eps[0:1]}
	v := dp.postFull(s)
	moved := backend{Name: "stale-s", Endpoints: eps[1:2]}
	tests := []struct {
		name string
		d    delta
	}{
		{"older base", delta{Base: v - 1, Backends: []backend{moved}}},
		{"newer base", delta{Base: v + 1, Backends: []backend{moved}}},
		{"unknown removed backend", delta{Base: v, Backends: []backend{moved}, Removed: []string{"stale-never"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.postDelta(tt.d)
			if status != 412 || !strings.Contains(text, "stale delta") {
				t.Errorf("POST = %d %q, want 412", status, text)
			}
			dp.expect("/", "stale-s", ids[0], 200)
		})
	}
	// A full post is always taken, and deltas go on from its version.
	v2 := dp.postFull(moved)
	if v2 != v+1 {
		t.Errorf("full post after refused deltas stored version %d, want %d", v2, v+1)
	}
	dp.expect("/", "stale-s", ids[1], 200)
	if status, text := dp.postDelta(delta{Base: v, Backends: []backend{s}}); status != 412 {
		t.Errorf("delta on the version before the full post: %d %q, want 412", status, text)
	}
	dp.version(dp.postDelta(delta{Base: v2, Backends: []backend{s}}))
	dp.expect("/", "stale-s", ids[0], 200)
}

// A malformed delta is refused as a whole: its good parts are not applied.
func (dp *dataPlane) testDeltaInvalid(t *testing.T) {
	eps, ids := startBackends(t, "bad", 2)
	v := dp.postFull(backend{Name: "bad-a", Endpoints: eps[0:1]})
	good := fmt.Sprintf(`{"name":"bad-a","endpoints":[{"address":%q,"port":%q}]}`, eps[1].Address, eps[1].Port)
	tests := []struct {
		name, body, reason string
	}{
		{"empty body", "", "empty body"},
		{"array", "[" + good + "]", "object"},
		{"not JSON", "{", "invalid JSON"},
		{"no base", `{"backends":[` + good + `]}`, "base"},
		{"string base", fmt.Sprintf(`{"base":"%d","backends":[%s]}`, v, good), "base"},
		{"fractional base", fmt.Sprintf(`{"base":%d.5,"backends":[%s]}`, v, good), "base"},
		{"backends object", fmt.Sprintf(`{"base":%d,"backends":%s}`, v, good), "array"},
		{"one bad backend", fmt.Sprintf(`{"base":%d,"backends":[%s,{"name":"bad-b","endpoints":[{"address":"1.2.3.4","port":80}]}]}`, v, good), "port"},
		{"duplicate", fmt.Sprintf(`{"base":%d,"backends":[%s,%s]}`, v, good, good), "duplicate"},
		{"removed not array", fmt.Sprintf(`{"base":%d,"backends":[%s],"removed":"bad-a"}`, v, good), "removed"},
		{"removed number", fmt.Sprintf(`{"base":%d,"backends":[%s],"removed":[1]}`, v, good), "removed"},
		{"changed and removed", fmt.Sprintf(`{"base":%d,"backends":[%s],"removed":["bad-a"]}`, v, good), "both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.configRequest("POST", "/configuration/backends/delta", tt.body)
			if status != 400 || !strings.Contains(text, tt.reason) {
				t.Errorf("POST %s = %d %q, want 400 mentioning %q", tt.body, status, text, tt.reason)
			}
			dp.expect("/", "bad-a", ids[0], 200)
		})
	}
	// The version did not move: a delta on it is taken.
	dp.version(dp.configRequest("POST", "/configuration/backends/delta", fmt.Sprintf(`{"base":%d,"backends":[%s]}`, v, good)))
	dp.expect("/", "bad-a", ids[1], 200)
}

// A delta that does not fit in the dict answers 507 and leaves the stored
// backends as they were; the version does not move.
func (dp *dataPlane) testDeltaDictFull(t *testing.T) {
	eps, ids := startBackends(t, "fulldelta", 1)
	v := dp.postFull(backend{Name: "fulldelta-a", Endpoints: eps})
	// Smaller than the 4m test dict, so it is decoded and written until
	// the dict is full, then rolled back (a body larger than the dict is
	// refused at once, see testBackendsDictFull).
	body, _ := bigBackends(t, 2500*1024, eps)
	var list []backend
	must(t, json.Unmarshal(body, &list))
	status, text := dp.postDelta(delta{Base: v, Backends: list, Removed: []string{"fulldelta-a"}})
	if status != 507 {
		t.Fatalf("delta of %d bytes (%d backends, a key and a pointer each) into a 4m dict: %d %q, want 507", len(body), len(list), status, text)
	}
	dp.expect("/", "fulldelta-a", ids[0], 200)
	if got := dp.storedNames(); len(got) != 1 || got[0] != "fulldelta-a" {
		t.Errorf("stored after 507: %d backends (%.3v), want fulldelta-a alone", len(got), got)
	}
	dp.version(dp.postDelta(delta{Base: v, Backends: []backend{{Name: "fulldelta-b", Endpoints: eps}}}))
	dp.expect("/", "fulldelta-b", ids[0], 200)
}

var storedVersionRE = regexp.MustCompile(`stored backends are version (\d+)`)

// A worker that must load everything (a full post of more backends than a
// change list holds) does so while deltas keep coming: it takes values
// newer than the version it read instead of waiting for a quiet moment.
func (dp *dataPlane) testLoadWhileDeltasKeepComing(t *testing.T) {
	eps, ids := startBackends(t, "steady", 1)
	spam := backend{Name: "steady-spam", Endpoints: eps}
	v := dp.postFull(spam)
	stop, done := make(chan struct{}), make(chan int)
	stopped := false
	stopSpam := func() int {
		if stopped {
			return 0
		}
		stopped = true
		close(stop)
		return <-done
	}
	// The deltas stop however the test ends: later tests post too.
	defer stopSpam()
	go func() {
		deltas := 0
		for {
			select {
			case <-stop:
				done <- deltas
				return
			default:
			}
			status, text := dp.postDelta(delta{Base: v, Backends: []backend{spam}})
			switch m := storedVersionRE.FindStringSubmatch(text); {
			case status == 201:
				v, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(text, "backends version ")))
				deltas++
			case status == 412 && m != nil:
				v, _ = strconv.Atoi(m[1])
			}
		}
	}()
	var many []backend
	for i := range 1500 { // more than a change list holds
		many = append(many, backend{Name: fmt.Sprintf("steady-%d", i), Endpoints: []endpoint{{"10.1.2.3", "8080"}}})
	}
	many[len(many)-1].Endpoints = eps
	many = append(many, spam)
	body, err := json.Marshal(many)
	must(t, err)
	// 409 says a delta is being stored right now: retry, as the applier
	// does.
	var status int
	var text string
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, text = dp.configRequest("POST", "/configuration/backends", string(body))
		if status != 409 || time.Now().After(deadline) {
			break
		}
	}
	if status != 201 {
		t.Fatalf("full post: %d %q", status, text)
	}
	last := many[len(many)-2].Name
	deadline := time.Now().Add(20 * time.Second)
	for served := map[string]bool{}; len(served) < len(dp.workers()); {
		if time.Now().After(deadline) {
			t.Fatalf("workers serving %s while deltas kept coming: %v (%d deltas)", last, served, stopSpam())
		}
		if r := dp.get("/", last); r.status == 200 && r.backend == ids[0] {
			served[r.worker] = true
		}
	}
	if n := stopSpam(); n == 0 {
		t.Errorf("no delta was taken meanwhile")
	}
}

// testVersionCopies: every publish, full or delta, of backends or
// certificates, leaves in switchyard_versions (where each request reads
// it) the version it stored with the values; and a request right after
// the answer is served with what was published.
func (dp *dataPlane) testVersionCopies(t *testing.T) {
	versions := func() string {
		t.Helper()
		resp, err := dp.proxy.Get("http://" + dp.httpAddr + "/versions-test")
		must(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return string(data)
	}
	eps, ids := startBackends(t, "copies", 2)
	a := backend{Name: "copies-a", Endpoints: eps[0:1]}
	v := dp.postFull(a)
	dp.expect("/", "copies-a", ids[0], 200)
	if want := fmt.Sprintf("backends_version %d %d\n", v, v); !strings.Contains(versions(), want) {
		t.Errorf("after a full post of version %d:\n%s", v, versions())
	}
	a.Endpoints = eps[1:2]
	next := dp.version(dp.postDelta(delta{Base: v, Backends: []backend{a}}))
	dp.expect("/", "copies-a", ids[1], 200)
	if want := fmt.Sprintf("backends_version %d %d\n", next, next); !strings.Contains(versions(), want) {
		t.Errorf("after a delta to version %d:\n%s", next, versions())
	}
	if status, text := dp.postCertificates(certConfig{Certificates: map[string]string{}, Servers: map[string]string{}}); status != 201 {
		t.Fatalf("POST certificates: %d %s", status, text)
	}
	m := regexp.MustCompile(`certificates_version (\d+) (\d+)\n`).FindStringSubmatch(versions())
	if m == nil || m[1] != m[2] || m[1] == "nil" {
		t.Errorf("after a certificates post:\n%s", versions())
	}
}
