package plugins

import "switchyard.dev/switchyard/bus/features"

// SecretID resolves an annotation value naming a Secret ("name" or
// "namespace/name") to its "namespace/name". An unreadable name is an
// Error on key, which rejects the Ingress. The host decides which
// namespaces an Ingress may read: it refuses a value naming another
// namespace before the plugin sees it, unless the controller ConfigMap
// sets allow-cross-namespace-resources, and sends only Secrets the Ingress
// may read, so a plugin looks the id up in Ingress.Secrets and treats an
// absent one as missing.
func SecretID(in Ingress, key, ref string) (string, *Error) {
	id, ok := features.ParseSecretRef(in.Namespace, ref)
	if !ok {
		e := Errorf(key, "%q is not a Secret name", ref)
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
