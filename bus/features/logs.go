package features

// Logs are a location's log settings: enable-access-log and
// enable-rewrite-log. The zero value changes nothing.
type Logs struct {
	// AccessLogOff is enable-access-log: "false": the location's requests
	// are not written to the access log.
	AccessLogOff bool `json:"accessLogOff,omitempty"`
	// RewriteLog is enable-rewrite-log: "true": NGINX logs the location's
	// rewrites (rewrite_log, at notice level in the error log).
	RewriteLog bool `json:"rewriteLog,omitempty"`
}
