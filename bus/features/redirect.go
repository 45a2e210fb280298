package features

import (
	"fmt"
	"regexp"
)

// Redirect is the redirect plugin's group: HTTPS enforcement, a fixed
// redirect in place of the backend, and the www ↔ bare host redirect.
type Redirect struct {
	// SSLRedirect is ssl-redirect when the annotation is set; nil keeps
	// the ConfigMap's ssl-redirect.
	SSLRedirect *bool `json:"sslRedirect,omitempty"`
	// ForceSSLRedirect redirects plain HTTP to HTTPS even when the host
	// has no TLS; nil keeps the ConfigMap's force-ssl-redirect.
	ForceSSLRedirect *bool `json:"forceSSLRedirect,omitempty"`
	// PreserveTrailingSlash keeps a trailing "/" of the request URI in the
	// HTTPS redirect (ingress-nginx drops it by default); nil keeps the
	// ConfigMap's preserve-trailing-slash.
	PreserveTrailingSlash *bool `json:"preserveTrailingSlash,omitempty"`
	// URL and Code answer every request with Code and Location: URL
	// (permanent-redirect or temporal-redirect).
	URL  string `json:"url,omitempty"`
	Code int    `json:"code,omitempty"`
	// FromToWWW adds a server for www.<host> (or <host> without "www.")
	// that redirects to the host with 308.
	FromToWWW bool `json:"fromToWWW,omitempty"`
}

// RedirectURLPattern is an absolute http(s) URL without quotes,
// backslashes, "$", ";", braces or whitespace: it is written quoted after
// `return`, where NGINX would interpolate "$" and end at a quote.
var RedirectURLPattern = regexp.MustCompile(`^https?://[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:[0-9]{1,5})?(/[A-Za-z0-9._~!&()*+,=:@%/?#-]*)?$`)

func (r *Redirect) validate() error {
	if r == nil {
		return nil
	}
	if r.URL == "" {
		if r.Code != 0 {
			return fmt.Errorf("code %d without a URL", r.Code)
		}
		return nil
	}
	if len(r.URL) > 2048 || !RedirectURLPattern.MatchString(r.URL) {
		return fmt.Errorf("url is not an http(s) URL without quotes, backslashes, $, ;, braces or spaces")
	}
	if r.Code < 300 || r.Code > 308 {
		return fmt.Errorf("code %d is not a redirect code (300-308)", r.Code)
	}
	return nil
}
