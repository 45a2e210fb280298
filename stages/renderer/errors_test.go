package renderer

import (
	"reflect"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestErrorsOf(t *testing.T) {
	own := &bus.Features{Errors: &bus.Errors{Codes: []int{404, 503}, DefaultBackend: "pages"}}
	codesOnly := &bus.Features{Errors: &bus.Errors{Codes: []int{404}}}
	signin := &bus.Features{Errors: &bus.Errors{Codes: []int{401, 403}},
		Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth/check", SigninURL: "https://login/start"}}}
	only401 := &bus.Features{Errors: &bus.Errors{Codes: []int{401}},
		Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth/check", SigninURL: "https://login/start"}}}
	fallbackOnly := &bus.Features{Errors: &bus.Errors{DefaultBackend: "pages"}}
	page := func(backend string, code int) errorPageView {
		p, err := errorPages{}.page(backend, code)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		l          location
		serverWide bool
		hasDefault bool
		want       *locationErrorsView
		wantErr    bool
	}{
		{"nothing", location{Ingress: "ns/a"}, false, true, nil, false},
		{"the ConfigMap's apply", location{Ingress: "ns/a"}, true, true,
			&locationErrorsView{}, false},
		{"annotation to its default-backend", location{Ingress: "ns/a", Features: own}, true, false,
			&locationErrorsView{Pages: []errorPageView{page("custom-default-backend-ns-pages", 404), page("custom-default-backend-ns-pages", 503)}}, false},
		{"annotation to --default-backend-service", location{Ingress: "ns/a", Features: codesOnly}, false, true,
			&locationErrorsView{Pages: []errorPageView{page(bus.DefaultBackendName, 404)}}, false},
		{"annotation without an error backend passes answers through", location{Ingress: "ns/a", Features: codesOnly}, true, false, nil, false},
		{"auth-signin keeps 401", location{Ingress: "ns/a", Features: signin}, false, true,
			&locationErrorsView{Pages: []errorPageView{page(bus.DefaultBackendName, 403)}}, false},
		{"only 401 with signin: nothing, not the ConfigMap's", location{Ingress: "ns/a", Features: only401}, true, true, nil, false},
		{"default-backend alone keeps the ConfigMap's codes", location{Ingress: "ns/a", Features: fallbackOnly}, true, true,
			&locationErrorsView{}, false},
		{"catch-all without an Ingress", location{}, true, true, &locationErrorsView{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pages := errorPages{}
			got, err := errorsOf(tc.l, tc.serverWide, bus.Settings{}, backendContext{hasDefault: tc.hasDefault}, pages)
			if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
			if got != nil && len(pages) != len(got.Pages) {
				t.Errorf("%d named locations for %d pages", len(pages), len(got.Pages))
			}
		})
	}
}

func TestErrorPageRefusesBadBackends(t *testing.T) {
	for _, b := range []string{`a"b`, "a b", "A", "", "a;b", "a{b"} {
		if _, err := (errorPages{}).page(b, 404); err == nil {
			t.Errorf("backend %q accepted", b)
		}
	}
	if _, err := (errorPages{}).page("ok", 600); err == nil {
		t.Error("code 600 accepted")
	}
}

func TestBalancerArgsWithFallback(t *testing.T) {
	fb := &bus.Features{Errors: &bus.Errors{DefaultBackend: "pages"}}
	// The metrics' labels: no path nor Service here, Ingress ns/a, host h.
	const labels = `, "\001ns\001a\001", "h"`
	for _, tc := range []struct {
		name string
		l    location
		tag  bool
		want string
	}{
		{"plain", location{Backend: "ns-web-80", Ingress: "ns/a"}, false, `"ns-web-80", nil, nil, nil, nil, nil` + labels},
		{"tag only", location{Backend: "ns-web-80", Ingress: "ns/a"}, true, `"ns-web-80", nil, nil, nil, true, nil` + labels},
		{"fallback", location{Backend: "ns-web-80", Ingress: "ns/a", Features: fb}, false, `"ns-web-80", nil, nil, "custom-default-backend-ns-pages", nil, nil` + labels},
		{"canary, fallback and tag", location{Backend: "ns-web-80", Ingress: "ns/a", Features: fb,
			Canary: &bus.LocationCanary{Ingress: "ns/beta", Backend: "ns-beta-80"}}, true,
			`"ns-web-80", "ns-beta-80", "ns/beta", "custom-default-backend-ns-pages", true, nil` + labels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := balancerArgs(tc.l, tc.tag, "h")
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
