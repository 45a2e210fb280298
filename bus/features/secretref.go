package features

import (
	"regexp"
	"strings"
)

// secretRefPattern is a Secret name with an optional namespace: DNS
// labels and subdomains only, so a value can never be a path ("../x").
var secretRefPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$`)

// ParseSecretRef reads an annotation value naming a Secret, relative to the
// Ingress's namespace, and returns "namespace/name". ok is false for a value
// that is not a Secret name.
func ParseSecretRef(namespace, value string) (id string, ok bool) {
	if !secretRefPattern.MatchString(value) {
		return "", false
	}
	if strings.Contains(value, "/") {
		return value, true
	}
	return namespace + "/" + value, true
}
