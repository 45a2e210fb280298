package features

import (
	"fmt"
	"regexp"
)

// CORS is the cors plugin's group: enable-cors and the cors-* annotations.
// It is applied per request in Lua (switchyard.cors): a preflight from an
// allowed origin is answered 204 by the proxy, any other request from one
// gets the CORS headers on its response, and a request from any other
// origin gets none.
type CORS struct {
	// Origins are "*" alone, or origins in lower case,
	// "scheme://host[:port]", where the host may start with "*." for
	// exactly one label. Empty: no origin is allowed (every one given was
	// unreadable).
	Origins []string `json:"origins"`
	// Methods, Headers and ExposeHeaders are written as the annotations
	// gave them (ExposeHeaders "" is no header).
	Methods       string `json:"methods"`
	Headers       string `json:"headers"`
	ExposeHeaders string `json:"exposeHeaders,omitempty"`
	Credentials   bool   `json:"credentials"`
	// MaxAge is Access-Control-Max-Age in seconds.
	MaxAge int `json:"maxAge"`
}

// CORS value patterns. ingress-nginx's own validators, without the "\s"
// that would let a line break into a header (only spaces and tabs).
var (
	CORSOriginPattern        = regexp.MustCompile(`^https?://(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]{1,5})?$`)
	CORSMethodsPattern       = regexp.MustCompile(`^([A-Za-z]+,?[ \t]?)+$`)
	CORSHeadersPattern       = regexp.MustCompile(`^([A-Za-z0-9_-]+,?[ \t]?)+$`)
	CORSExposeHeadersPattern = regexp.MustCompile(`^(([A-Za-z0-9_-]+|\*),?[ \t]?)+$`)
)

// CORS limits: a header value NGINX and browsers take without trouble.
const (
	MaxCORSValue   = 1000
	MaxCORSOrigins = 100
	// MaxCORSMaxAge is a year; ingress-nginx's default is 20 days.
	MaxCORSMaxAge = 365 * 24 * 3600
)

func (c *CORS) validate() error {
	if c == nil {
		return nil
	}
	if len(c.Origins) > MaxCORSOrigins {
		return fmt.Errorf("%d origins, at most %d", len(c.Origins), MaxCORSOrigins)
	}
	for _, o := range c.Origins {
		if o == "*" && len(c.Origins) == 1 {
			continue
		}
		if !CORSOriginPattern.MatchString(o) {
			return fmt.Errorf("origin %q is not scheme://host[:port]", o)
		}
	}
	for _, f := range []struct {
		name, value string
		pattern     *regexp.Regexp
		optional    bool
	}{
		{"methods", c.Methods, CORSMethodsPattern, false},
		{"headers", c.Headers, CORSHeadersPattern, false},
		{"exposeHeaders", c.ExposeHeaders, CORSExposeHeadersPattern, true},
	} {
		if f.value == "" && f.optional {
			continue
		}
		if len(f.value) > MaxCORSValue || !f.pattern.MatchString(f.value) {
			return fmt.Errorf("%s %q does not match %s (at most %d bytes)", f.name, f.value, f.pattern, MaxCORSValue)
		}
	}
	if c.MaxAge < 0 || c.MaxAge > MaxCORSMaxAge {
		return fmt.Errorf("maxAge %d is not between 0 and %d", c.MaxAge, MaxCORSMaxAge)
	}
	return nil
}
