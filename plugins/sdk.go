// Package plugins is the SDK for Switchyard annotation plugins.
//
// A plugin owns a set of annotation keys. For each model change the host
// sends it, in one batch, every Ingress that carries one of its keys; the
// plugin validates the values and returns typed Features per Ingress, or
// errors naming the annotation. A plugin never returns NGINX text: the host
// validates the Features again and the renderer decides how they are
// written.
//
// A plugin is a program whose main calls Serve. One that handles an Ingress
// at a time implements IngressPlugin and is served through PerIngress:
//
//	func main() {
//		if err := plugins.Serve(plugins.PerIngress(myPlugin{})); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// Build it, put the binary in the directory given to `switchyard run
// --plugin-dir`, and the annotations stage starts it as a child process
// (hashicorp/go-plugin over gRPC). The program is not meant to be run by
// hand.
//
// This package and bus/features, whose types it re-exports, import neither
// the bus nor NATS, client-go or zap: a plugin links the SDK, go-plugin and
// gRPC, nothing of the controller.
package plugins

import (
	"context"
	"fmt"

	"switchyard.dev/switchyard/bus/features"
)

// Plugin is what a plugin author implements (or gets from PerIngress).
type Plugin interface {
	// Describe names the plugin and the annotations it owns. It is called
	// once per process and must not change while the process runs.
	Describe() Description
	// Apply validates and applies the annotations of each Ingress in the
	// batch and returns one Result per Ingress, in any order. Apply must
	// not keep state between calls that changes its answers: the host may
	// call it again for the same Ingress at any time, for instance after a
	// restart. ctx ends when the host's call times out. An error (or a
	// panic) fails the whole batch: the host fails its Ingresses closed and
	// calls again with the next change.
	Apply(ctx context.Context, batch []Ingress) ([]Result, error)
}

// IngressPlugin is a plugin that decides for one Ingress at a time, on its
// own: PerIngress turns it into a Plugin.
type IngressPlugin interface {
	Describe() Description
	// ApplyIngress returns the features of one Ingress and the problems
	// with its annotations; a rejecting Error rejects the Ingress.
	ApplyIngress(ctx context.Context, in Ingress) (Features, []Error)
}

// PerIngress returns a Plugin whose Apply calls p.ApplyIngress for each
// Ingress of the batch, in order, until ctx ends.
func PerIngress(p IngressPlugin) Plugin { return perIngress{p} }

type perIngress struct{ IngressPlugin }

func (p perIngress) Apply(ctx context.Context, batch []Ingress) ([]Result, error) {
	results := make([]Result, 0, len(batch))
	for _, in := range batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		features, errs := p.ApplyIngress(ctx, in)
		results = append(results, Result{Namespace: in.Namespace, Name: in.Name, Features: features, Errors: errs})
	}
	return results, nil
}

// Description is what Describe returns.
type Description struct {
	// Name is short and unique, lower case ("canary", "responseheader").
	Name string
	// Doc is one paragraph for `switchyard annotations`.
	Doc         string
	Annotations []Annotation
}

// Annotation describes one key a plugin owns.
type Annotation struct {
	// Key is relative to the controller's annotation prefix
	// ("canary-weight" means nginx.ingress.kubernetes.io/canary-weight by
	// default) unless it holds a "/" ("plugins.example.com/response-header").
	Key string
	// Pattern is a Go regular expression the whole value must match; the
	// host checks it before the plugin sees the value. CR, LF and NUL are
	// refused by the host whatever the pattern says.
	Pattern string
	Scope   Scope
	Risk    Risk
	Doc     string
	// Default is the value assumed when the annotation is absent, for the
	// documentation only.
	Default string
	// Aliases are other keys that mean the same (ingress-nginx's
	// limit-whitelist for limit-allowlist). The plugin sees the value under
	// Key.
	Aliases []string
	// SecretRef says the value names a Secret ("name" in the Ingress's
	// namespace, or "namespace/name"); the host sends its data along.
	SecretRef bool
}

// ObjectRefPattern is a Secret or ConfigMap an annotation names: "name"
// or "namespace/name" (a DNS-1123 label, then a subdomain); never a path
// (CVE-2025-24513 was a traversal through a file name).
const ObjectRefPattern = `([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?`

// BoolPattern is what strconv.ParseBool accepts, as ingress-nginx's
// GetBoolAnnotation does: the pattern of every boolean annotation.
const BoolPattern = `1|t|T|TRUE|true|True|0|f|F|FALSE|false|False`

// LocationAnnotation is an annotation that applies to each location of
// the Ingress, the usual kind.
func LocationAnnotation(key, pattern string, risk Risk, def, doc string) Annotation {
	return Annotation{Key: key, Pattern: pattern, Scope: ScopeLocation, Risk: risk, Default: def, Doc: doc}
}

// Scope says what an annotation applies to, for the documentation.
type Scope int

const (
	ScopeIngress Scope = iota + 1
	ScopeLocation
)

func (s Scope) String() string {
	switch s {
	case ScopeIngress:
		return "ingress"
	case ScopeLocation:
		return "location"
	}
	return "unknown"
}

// Risk is how much an annotation can do, as in ingress-nginx. The host
// refuses annotations above the controller's annotations-risk-level
// (default High, so Critical ones are refused).
type Risk int

const (
	RiskLow Risk = iota + 1
	RiskMedium
	RiskHigh
	RiskCritical
)

var riskNames = []string{"", "Low", "Medium", "High", "Critical"}

func (r Risk) String() string {
	if r < RiskLow || r > RiskCritical {
		return "unknown"
	}
	return riskNames[r]
}

// ParseRisk reads a risk level name (case-insensitive first letter kept as
// written in the ConfigMap: Low, Medium, High, Critical).
func ParseRisk(name string) (Risk, bool) {
	for i, n := range riskNames {
		if i > 0 && n == name {
			return Risk(i), true
		}
	}
	return 0, false
}

// Ingress is one Ingress as a plugin sees it.
type Ingress struct {
	Namespace string
	Name      string
	// Annotations holds only the keys this plugin owns, by their Key, each
	// already matched against its Pattern.
	Annotations map[string]string
	// Secrets holds the Secrets named by SecretRef annotations, by
	// "namespace/name"; a Secret that does not exist is absent. Secret data
	// must never appear in an error message.
	Secrets map[string]map[string][]byte
}

// Result is what a plugin decided for one Ingress.
type Result struct {
	Namespace string
	Name      string
	// Features apply to every location of the Ingress.
	Features Features
	// Errors reject the Ingress, unless each is a Warning.
	Errors []Error
}

// Error is a problem with one annotation, said so the Ingress's owner can
// fix it. It becomes a Kubernetes Event on the Ingress.
type Error struct {
	// Key is the annotation's Key.
	Key     string
	Message string
	// Warning is reported but does not reject the Ingress.
	Warning bool
}

// Errorf returns a rejecting Error for key.
func Errorf(key, format string, args ...any) Error {
	return Error{Key: key, Message: fmt.Sprintf(format, args...)}
}

// Features are the typed features a plugin can return, defined in
// bus/features (a leaf package: the standard library only); see
// features.Features.
type (
	Features = features.Features
	Deny     = features.Deny
	Header   = features.Header
	Canary   = features.Canary
	// Auth group (plugin auth).
	Auth         = features.Auth
	BasicAuth    = features.BasicAuth
	ExternalAuth = features.ExternalAuth
	RateLimit    = features.RateLimit
	Redirect     = features.Redirect
	Rewrite      = features.Rewrite
	Proxy        = features.Proxy
	// Balancing group (plugin balancing).
	Balancing             = features.Balancing
	UpstreamHashByConfig  = features.UpstreamHashByConfig
	SessionAffinityConfig = features.SessionAffinityConfig
	CookieSessionAffinity = features.CookieSessionAffinity
)
