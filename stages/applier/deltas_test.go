package applier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestEndpointChangePostsOnlyThatBackend: after the first full post, a
// change of one backend's endpoints posts that backend alone, a removal
// only its name; when the data plane holds another version than the
// applier last posted, the delta is refused and everything is posted.
func TestEndpointChangePostsOnlyThatBackend(t *testing.T) {
	r := newRig(t, -1)
	backends := []bus.Backend{
		{Name: "ns-a-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "9"}}},
		{Name: "ns-b-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "10"}}},
		{Name: "ns-c-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "11"}}},
	}
	files := map[string]string{"nginx.conf": r.config("deltas")}
	r.publish(files, backends...)
	if res := r.result(); res.Error != "" || res.BackendsPost != "full" {
		t.Fatalf("first apply: %+v, want a full post", res)
	}

	// The dicts are new: the full post stored version 1.
	backends[1].Endpoints = []bus.Endpoint{{Address: "127.0.0.2", Port: "10"}}
	r.publish(files, backends...)
	moved, _ := json.Marshal(backends[1])
	want := fmt.Sprintf(`{"base":1,"backends":[%s],"removed":[]}`, moved)
	if res := r.result(); res.Error != "" || res.BackendsPost != "delta" || res.BackendsBytes != len(want) {
		t.Fatalf("one-endpoint change: %+v, want a delta of %d bytes: %s", res, len(want), want)
	}
	if got := r.storedBackends(); !strings.Contains(got, "127.0.0.2") || !strings.Contains(got, `"ns-c-80"`) {
		t.Fatalf("stored after the delta: %s", got)
	}

	r.publish(files, backends[0], backends[1])
	want = `{"base":2,"backends":[],"removed":["ns-c-80"]}`
	if res := r.result(); res.Error != "" || res.BackendsPost != "delta" || res.BackendsBytes != len(want) {
		t.Fatalf("removal: %+v, want a delta of %d bytes: %s", res, len(want), want)
	}
	if got := r.storedBackends(); strings.Contains(got, `"ns-c-80"`) {
		t.Fatalf("removed backend still stored: %s", got)
	}

	// Someone else posts to the data plane: its version moves on.
	r.postDirectly(t, `[{"name":"intruder","endpoints":[]}]`)
	backends[0].Endpoints = []bus.Endpoint{}
	r.publish(files, backends[0], backends[1])
	res := r.result()
	if res.Error != "" || res.BackendsPost != "full" {
		t.Fatalf("change after the data plane moved on: %+v, want a full post after the refused delta", res)
	}
	got := r.storedBackends()
	if strings.Contains(got, "intruder") || !strings.Contains(got, `"ns-a-80"`) || !strings.Contains(got, "127.0.0.2") {
		t.Fatalf("stored after the resync: %s", got)
	}
	// And deltas go on from the full post's version.
	backends[0].Endpoints = []bus.Endpoint{{Address: "127.0.0.3", Port: "9"}}
	r.publish(files, backends[0], backends[1])
	if res := r.result(); res.Error != "" || res.BackendsPost != "delta" {
		t.Fatalf("change after the resync: %+v, want a delta", res)
	}
}

func (r *rig) postDirectly(t *testing.T, body string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.socket)
	}}}
	resp, err := client.Post("http://switchyard/configuration/backends", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("direct POST: %s", resp.Status)
	}
}
