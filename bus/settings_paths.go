package bus

// PathsSettings are the controller ConfigMap keys about Ingress paths.
type PathsSettings struct {
	// StrictValidatePathType is strict-validate-path-type: Exact and Prefix
	// paths must be plain paths (letters, digits, '.', '_', '-', '/').
	// When false, a Prefix path of an Ingress with use-regex "true" may be
	// a regular expression, as ingress-nginx accepted before v1.12; it is
	// still checked against the safe regex grammar.
	StrictValidatePathType bool `json:"strictValidatePathType"`
}

// defaultPathsSettings are ingress-nginx's defaults (v1.12 and later).
func defaultPathsSettings() PathsSettings {
	return PathsSettings{StrictValidatePathType: true}
}
