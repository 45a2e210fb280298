package features

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Errors are a location's custom-http-errors and default-backend
// annotations, as in ingress-nginx: the backend's answers with one of
// Codes are replaced by the page the error backend serves for the code,
// and a location whose Service has no ready endpoint is served by
// DefaultBackend. The zero value changes nothing.
type Errors struct {
	// Codes are the intercepted statuses (400 to 599, no repeats, sorted).
	// Set, they replace the ConfigMap's custom-http-errors for the
	// location; empty, the ConfigMap's apply.
	Codes []int `json:"codes,omitempty"`
	// DefaultBackend is a Service of the Ingress's namespace: it serves
	// Codes' pages in place of --default-backend-service, and the
	// location's requests while its own Service has no ready endpoint.
	DefaultBackend string `json:"defaultBackend,omitempty"`
	// DisableIntercept is disable-proxy-intercept-errors, nil for the
	// ConfigMap's: true lets the backend's own error answers through (the
	// pages then serve only NGINX's own errors).
	DisableIntercept *bool `json:"disableIntercept,omitempty"`
}

// MaxErrorCodes bounds a custom-http-errors list: every status from 400 to
// 599 once.
const MaxErrorCodes = 200

// ServiceNamePattern is a Kubernetes Service name (an RFC 1035 label).
var ServiceNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ParseErrorCodes parses a comma-separated list of HTTP statuses from 400 to
// 599 (custom-http-errors, the annotation and the ConfigMap key). Blanks
// around a code are allowed, and a repeated code counts once (as
// ingress-nginx); an empty list or an empty item is not. The result is
// sorted.
func ParseErrorCodes(s string) ([]int, error) {
	items := strings.Split(s, ",")
	if len(items) > MaxErrorCodes {
		return nil, fmt.Errorf("%d codes, at most %d", len(items), MaxErrorCodes)
	}
	codes := make([]int, 0, len(items))
	for _, item := range items {
		item = strings.TrimSpace(item)
		code, err := strconv.Atoi(item)
		if err != nil || len(item) != 3 || code < 400 || code > 599 {
			return nil, fmt.Errorf("%q is not an HTTP status from 400 to 599", clip(item))
		}
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return slices.Compact(codes), nil
}

// clip keeps an echoed value short.
func clip(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

func (e *Errors) validate() error {
	if e == nil {
		return nil
	}
	if len(e.Codes) > MaxErrorCodes {
		return fmt.Errorf("%d codes, at most %d", len(e.Codes), MaxErrorCodes)
	}
	for i, c := range e.Codes {
		if c < 400 || c > 599 {
			return fmt.Errorf("code %d is not from 400 to 599", c)
		}
		if i > 0 && c <= e.Codes[i-1] {
			return fmt.Errorf("codes are not sorted without repeats")
		}
	}
	if e.DefaultBackend != "" && !ServiceNamePattern.MatchString(e.DefaultBackend) {
		return fmt.Errorf("default backend %q is not a Service name", e.DefaultBackend)
	}
	return nil
}
