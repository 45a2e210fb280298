package renderer

// Custom error pages (custom-http-errors, the ConfigMap key and the
// annotation) and the default-backend annotation, as ingress-nginx writes
// them: a location whose backend answers one of the codes hands the request
// to a named location "@custom_<backend>_<code>" of its server, which
// proxies it (GET, path "/", no body) through the Lua balancer to the error
// backend with X-Code, X-Format, X-Original-URI, X-Namespace,
// X-Ingress-Name, X-Service-Name, X-Service-Port and X-Request-ID. The
// ConfigMap's codes go to --default-backend-service and are written once
// per server; an Ingress's annotation replaces them for its locations (a
// location's error_page hides the server's) and goes to its default-backend
// Service when it names one.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// serverErrorsView is the custom-http-errors part of a server.
type serverErrorsView struct {
	// Source attributes the server-wide error_page lines to the ConfigMap
	// key; Pages are those lines, "" when the ConfigMap lists no code (or
	// there is no default backend to serve them).
	Source string
	Pages  []errorPageView
	// Locations are the named locations every error_page of the server
	// (its own and its locations') hands requests to, sorted by name.
	Locations []errorLocationView
}

// errorPageView is one error_page: the code, and the named location.
type errorPageView struct {
	Code   int
	Target string
}

// errorLocationView is one named location "@custom_<backend>_<code>".
type errorLocationView struct {
	Name string
	Code int
	// Upstream (quoted) and BalancerArg (a Lua literal) name the error
	// backend.
	Upstream, BalancerArg string
}

// locationErrorsView is what a location writes for custom errors.
type locationErrorsView struct {
	// Pages are the location's own error_page lines (the annotation).
	// The error backend is told $namespace, $ingress_name, $service_name
	// and $service_port, which every location sets (metrics.go); the Lua
	// balancer sets the last two again from the backend it picks.
	Pages []errorPageView
	// InterceptOff is disable-proxy-intercept-errors: the backend's error
	// answers pass, the pages serve NGINX's own errors only.
	InterceptOff bool
}

// errorPages collects a server's named error locations while its locations
// are resolved.
type errorPages map[string]errorLocationView

// page returns the error_page of code to backend, adding its named
// location.
func (p errorPages) page(backend string, code int) (errorPageView, error) {
	if !backendNamePattern.MatchString(backend) || code < 400 || code > 599 {
		return errorPageView{}, fmt.Errorf("invalid error page %d of backend %q", code, backend)
	}
	name := "@custom_" + backend + "_" + strconv.Itoa(code)
	if _, ok := p[name]; !ok {
		upstream, err := quote(backend)
		if err != nil {
			return errorPageView{}, err
		}
		arg, err := luaString(backend)
		if err != nil {
			return errorPageView{}, err
		}
		p[name] = errorLocationView{Name: name, Code: code, Upstream: upstream, BalancerArg: arg}
	}
	return errorPageView{Code: code, Target: name}, nil
}

func (p errorPages) sorted() []errorLocationView {
	var out []errorLocationView
	for _, name := range slices.Sorted(maps.Keys(p)) {
		out = append(out, p[name])
	}
	return out
}

// serverErrorPages are the ConfigMap's error_page lines of a server: to
// --default-backend-service, when there is one.
func serverErrorPages(settings bus.Settings, backends backendContext, pages errorPages) ([]errorPageView, error) {
	if !backends.hasDefault {
		return nil, nil
	}
	var out []errorPageView
	for _, code := range settings.CustomHTTPErrors {
		p, err := pages.page(bus.DefaultBackendName, code)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// errorsOf resolves a location's custom errors: its annotation's codes
// (to its default-backend Service, else to --default-backend-service; with
// neither there is no page to serve and the backend's answer passes),
// whether the ConfigMap's apply, and whether the backend's own answers are
// intercepted (disable-proxy-intercept-errors, the annotation's or the
// ConfigMap's). Nil when the location has no page.
// Codes an auth-signin redirect answers (401) stay with it.
func errorsOf(l location, serverWide bool, settings bus.Settings, backends backendContext, pages errorPages) (*locationErrorsView, error) {
	var e *bus.Errors
	if l.Features != nil {
		e = l.Features.Errors
	}
	v := &locationErrorsView{InterceptOff: settings.DisableProxyInterceptErrors}
	if e != nil && e.DisableIntercept != nil {
		v.InterceptOff = *e.DisableIntercept
	}
	if e != nil && len(e.Codes) > 0 {
		target := errorBackend(l, backends)
		for _, code := range e.Codes {
			if target == "" || (code == 401 && hasSignin(l)) {
				continue
			}
			p, err := pages.page(target, code)
			if err != nil {
				return nil, err
			}
			v.Pages = append(v.Pages, p)
		}
		if len(v.Pages) == 0 {
			return nil, nil // the annotation's list replaces the ConfigMap's
		}
	} else if !serverWide {
		return nil, nil
	}
	return v, nil
}

// errorBackend is the backend that serves a location's annotation codes,
// "" when there is none.
func errorBackend(l location, backends backendContext) string {
	if fb := fallbackBackend(l); fb != "" {
		return fb
	}
	if backends.hasDefault {
		return bus.DefaultBackendName
	}
	return ""
}

// fallbackBackend is the backend of the location's default-backend
// annotation, "" when it has none.
func fallbackBackend(l location) string {
	if l.Features == nil || l.Features.Errors == nil || l.Features.Errors.DefaultBackend == "" {
		return ""
	}
	ns, _, _ := strings.Cut(l.Ingress, "/")
	return bus.CustomDefaultBackendName(ns, l.Features.Errors.DefaultBackend)
}

func hasSignin(l location) bool {
	f := l.Features
	return f != nil && f.Auth != nil && f.Auth.External != nil && f.Auth.External.SigninURL != ""
}
