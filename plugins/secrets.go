package plugins

import (
	"strings"

	"switchyard.dev/switchyard/bus/features"
)

// OwnSecret resolves an annotation value naming a Secret ("name" or
// "namespace/name") to its "namespace/name", which must be of the
// Ingress's own namespace (the host sends only those). An unreadable name
// or another namespace is an Error on key, which rejects the Ingress.
func OwnSecret(in Ingress, key, ref string) (string, *Error) {
	id, ok := features.ParseSecretRef(in.Namespace, ref)
	if !ok {
		e := Errorf(key, "%q is not a Secret name", ref)
		return "", &e
	}
	if !strings.HasPrefix(id, in.Namespace+"/") {
		e := Errorf(key, "Secret %s is in another namespace; an Ingress may only use Secrets of its own namespace", id)
		return "", &e
	}
	return id, nil
}

// DenyUnusable fails an Ingress closed: its locations answer 503, with a
// warning on key saying why (what a Secret that cannot be used asks for;
// never its content).
func DenyUnusable(key, reason, why string) (*features.Deny, Error) {
	return &features.Deny{Status: 503, Reason: reason},
		Error{Key: key, Warning: true, Message: why + "; the Ingress answers 503 until it is fixed"}
}
