package features

import (
	"fmt"
	"regexp"
)

// Mirror is the mirror plugin's group: every request of the location is
// also sent, in the background, to Target (mirror-target), whose answer is
// dropped.
type Mirror struct {
	// Target is an http(s) URL with a literal host; after the host it may
	// hold the variables of MirrorTargetPattern ($request_uri for the
	// request's own path, as ingress-nginx documents).
	Target string `json:"target"`
	// Host is the Host header of the mirrored request (mirror-host, by
	// default the target's host).
	Host string `json:"host"`
	// NoBody leaves the request body out (mirror-request-body: off).
	NoBody bool `json:"noBody,omitempty"`
}

// MirrorTargetSource is mirror-target: a literal scheme, host and port,
// so neither a client nor a variable can choose where requests go
// (CVE-2025-1098 wrote the value unquoted into nginx.conf); then
// $request_uri or $uri, or a path or query, where the auth variables may
// appear as whole tokens.
const MirrorTargetSource = `https?://[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?` +
	`(?:(?:\$(?:request_uri|uri))(?:` + authVarStops + authVarTail + `)?|[/?]` + authVarTail + `)?`

var (
	// MirrorTargetPattern is MirrorTargetSource as a whole-string pattern.
	MirrorTargetPattern = regexp.MustCompile(`^(?:` + MirrorTargetSource + `)$`)
	// MirrorHostPattern is a host name with an optional port.
	MirrorHostPattern = regexp.MustCompile(`^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$`)
)

func (m *Mirror) validate() error {
	if m == nil {
		return nil
	}
	if len(m.Target) > 2048 || !MirrorTargetPattern.MatchString(m.Target) {
		return fmt.Errorf("target %q is not an http(s) URL with a literal host (and $request_uri, $uri or a path after it)", m.Target)
	}
	if !MirrorHostPattern.MatchString(m.Host) {
		return fmt.Errorf("host %q is not a host name", m.Host)
	}
	return nil
}
