// Package cors owns ingress-nginx's CORS annotations: enable-cors,
// cors-allow-origin, cors-allow-methods, cors-allow-headers,
// cors-expose-headers, cors-allow-credentials and cors-max-age.
//
// Values are read as ingress-nginx reads them, defaults included: an
// unreadable value falls back to its default (an unreadable origin is
// skipped), as there; here each fallback is a warning instead of a log
// line only the controller's operator sees.
package cors

import (
	"context"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyEnable        = "enable-cors"
	KeyAllowOrigin   = "cors-allow-origin"
	KeyAllowMethods  = "cors-allow-methods"
	KeyAllowHeaders  = "cors-allow-headers"
	KeyExposeHeaders = "cors-expose-headers"
	KeyCredentials   = "cors-allow-credentials"
	KeyMaxAge        = "cors-max-age"
)

// ingress-nginx's defaults.
const (
	DefaultMethods = "GET, PUT, POST, DELETE, PATCH, OPTIONS"
	DefaultHeaders = "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization"
	DefaultMaxAge  = 1728000
)

// The host's first check: the characters each value may hold at all
// (none that could leave a quoted string, no "$"); the plugin checks the
// shape and falls back to the default when it is wrong.
const (
	originChars = `[-A-Za-z0-9.:/*, ]+`
	listChars   = `[-A-Za-z0-9_*, \t]{1,1000}`
	ageChars    = `[-+]?[0-9]{1,12}`
)

// Plugin is the cors plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "cors",
		Doc:  "Cross-origin resource sharing, applied per request in Lua: preflights from an allowed origin answered 204 by the proxy, CORS headers on the other answers to an allowed origin.",
		Annotations: []plugins.Annotation{
			plugins.LocationAnnotation(KeyEnable, plugins.BoolPattern, plugins.RiskLow, "false",
				"Answer CORS for the Ingress's locations; the other cors-* annotations take effect only with it."),
			plugins.LocationAnnotation(KeyAllowOrigin, originChars, plugins.RiskMedium, "*",
				`Comma-separated origins allowed, "http(s)://host[:port]", the host may start with "*." for one label; "*" allows any. Matched against the whole Origin header, case-insensitively.`),
			plugins.LocationAnnotation(KeyAllowMethods, listChars, plugins.RiskMedium, DefaultMethods,
				"Access-Control-Allow-Methods: comma-separated methods (letters only)."),
			plugins.LocationAnnotation(KeyAllowHeaders, listChars, plugins.RiskMedium, DefaultHeaders,
				"Access-Control-Allow-Headers: comma-separated header names."),
			plugins.LocationAnnotation(KeyExposeHeaders, listChars, plugins.RiskMedium, "",
				`Access-Control-Expose-Headers: comma-separated header names or "*".`),
			plugins.LocationAnnotation(KeyCredentials, plugins.BoolPattern, plugins.RiskLow, "true",
				"Send Access-Control-Allow-Credentials: true."),
			plugins.LocationAnnotation(KeyMaxAge, ageChars, plugins.RiskLow, strconv.Itoa(DefaultMaxAge),
				"Access-Control-Max-Age of preflight answers, in seconds."),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	c, errs := Parse(in.Annotations)
	return plugins.Features{CORS: c}, errs
}

// Parse reads the annotations; nil when enable-cors is not true.
func Parse(a map[string]string) (*features.CORS, []plugins.Error) {
	var errs []plugins.Error
	warn := func(key, format string, args ...any) {
		e := plugins.Errorf(key, format, args...)
		e.Warning = true
		errs = append(errs, e)
	}
	enabled := false
	if v, ok := a[KeyEnable]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			warn(KeyEnable, "is not a boolean; CORS stays off")
		}
		enabled = b
	}
	if !enabled {
		for _, key := range []string{KeyAllowOrigin, KeyAllowMethods, KeyAllowHeaders, KeyExposeHeaders, KeyCredentials, KeyMaxAge} {
			if _, ok := a[key]; ok {
				warn(key, "has no effect without %s: \"true\"", KeyEnable)
			}
		}
		return nil, errs
	}
	c := &features.CORS{
		Origins:       []string{"*"},
		Methods:       listOr(a, KeyAllowMethods, DefaultMethods, features.CORSMethodsPattern, warn),
		Headers:       listOr(a, KeyAllowHeaders, DefaultHeaders, features.CORSHeadersPattern, warn),
		ExposeHeaders: listOr(a, KeyExposeHeaders, "", features.CORSExposeHeadersPattern, warn),
		Credentials:   true,
		MaxAge:        DefaultMaxAge,
	}
	if v, ok := a[KeyAllowOrigin]; ok {
		c.Origins = parseOrigins(v, warn)
	}
	if v, ok := a[KeyCredentials]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			c.Credentials = b
		} else {
			warn(KeyCredentials, "is not a boolean; using the default, true")
		}
	}
	if v, ok := a[KeyMaxAge]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= features.MaxCORSMaxAge {
			c.MaxAge = n
		} else {
			warn(KeyMaxAge, "is not a number of seconds between 0 and %d; using the default, %d", features.MaxCORSMaxAge, DefaultMaxAge)
		}
	}
	return c, errs
}

// listOr is the annotation's value when it matches pattern, else def.
func listOr(a map[string]string, key, def string, pattern interface{ MatchString(string) bool }, warn func(string, string, ...any)) string {
	v, ok := a[key]
	if !ok {
		return def
	}
	if len(v) > features.MaxCORSValue || !pattern.MatchString(v) {
		if def == "" {
			warn(key, "is not a comma-separated list of header names; no header is sent")
		} else {
			warn(key, "is not a comma-separated list of the names it takes; using the default, %q", def)
		}
		return def
	}
	return v
}

// parseOrigins reads cors-allow-origin. A "*" anywhere allows every
// origin, as in ingress-nginx; an unreadable origin is skipped with a
// warning. A trailing "/" is dropped, with a warning: browsers never send
// one, so an origin written with it could never match (ingress-nginx
// skips it; the intent is plain).
func parseOrigins(v string, warn func(string, string, ...any)) []string {
	origins := []string{}
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" {
			return []string{"*"}
		}
		if trimmed, ok := strings.CutSuffix(o, "/"); ok {
			warn(KeyAllowOrigin, "origin %q: an Origin header never ends with \"/\"; using %q", o, trimmed)
			o = trimmed
		}
		o = strings.ToLower(o)
		if !features.CORSOriginPattern.MatchString(o) || !portInRange(o) {
			warn(KeyAllowOrigin, "origin %q is not http(s)://host[:port] (the host may start with \"*.\"); it is skipped", o)
			continue
		}
		if len(origins) == features.MaxCORSOrigins {
			warn(KeyAllowOrigin, "holds more than %d origins; the rest are skipped", features.MaxCORSOrigins)
			break
		}
		origins = append(origins, o)
	}
	if len(origins) == 0 {
		warn(KeyAllowOrigin, "holds no usable origin: no cross-origin request is answered with CORS headers")
	}
	return origins
}

// portInRange checks the port of an origin that matched the pattern.
func portInRange(origin string) bool {
	hostPort := origin[strings.Index(origin, "://")+3:]
	i := strings.LastIndexByte(hostPort, ':')
	if i < 0 {
		return true
	}
	n, err := strconv.Atoi(hostPort[i+1:])
	return err == nil && n > 0 && n <= 65535
}
