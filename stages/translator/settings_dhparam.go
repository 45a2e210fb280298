package translator

import (
	"bytes"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
)

// ssl-dh-param names a Secret ("namespace/name") whose dhparam.pem holds
// the Diffie-Hellman parameters of the DHE ciphers, as in ingress-nginx.
// The Secret is read here, so a change of it re-renders like a change of
// the controller ConfigMap, and NGINX only ever gets parameters that
// parse.

// dhParamKey is the Secret key ingress-nginx reads.
const dhParamKey = "dhparam.pem"

// minDHBits is the smallest prime accepted: OpenSSL 3 refuses a DHE
// handshake with less at its default security level.
const minDHBits = 2048

// resolveDHParam fills s.SSLDHParamPEM from the Secret s.SSLDHParam names.
// A missing Secret or bad parameters are a Problem on the key, and no DHE
// cipher is offered meanwhile (never parameters NGINX could not load).
func resolveDHParam(s *bus.Settings, secrets map[string]*corev1.Secret) []bus.Problem {
	s.SSLDHParamPEM = ""
	if s.SSLDHParam == "" {
		return nil
	}
	problem := func(reason, format string, args ...any) []bus.Problem {
		return []bus.Problem{{Field: "data.ssl-dh-param", Reason: reason,
			Message: "ssl-dh-param: " + fmt.Sprintf(format, args...) + "; no DHE cipher is offered until it is fixed"}}
	}
	secret, ok := secrets[s.SSLDHParam]
	if !ok {
		return problem("SecretNotFound", "Secret %s is not found", s.SSLDHParam)
	}
	data, ok := secret.Data[dhParamKey]
	if !ok {
		return problem(ReasonInvalidValue, "Secret %s has no %s", s.SSLDHParam, dhParamKey)
	}
	if err := checkDHParam(data); err != nil {
		return problem(ReasonInvalidValue, "Secret %s: %s: %v", s.SSLDHParam, dhParamKey, err)
	}
	s.SSLDHParamPEM = string(data)
	return nil
}

// checkDHParam accepts exactly one PEM block "DH PARAMETERS" holding the
// PKCS #3 structure (a prime of at least minDHBits and a generator), and
// nothing else: the file NGINX reads is this content.
func checkDHParam(data []byte) error {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "DH PARAMETERS" {
		return fmt.Errorf("not a PEM block of DH PARAMETERS")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return fmt.Errorf("more than one PEM block")
	}
	var params struct {
		P, G *big.Int
		L    int `asn1:"optional"`
	}
	if tail, err := asn1.Unmarshal(block.Bytes, &params); err != nil || len(tail) != 0 {
		return fmt.Errorf("DH PARAMETERS do not parse")
	}
	if params.P.Sign() <= 0 || params.G.Sign() <= 0 {
		return fmt.Errorf("DH PARAMETERS do not parse")
	}
	if bits := params.P.BitLen(); bits < minDHBits {
		return fmt.Errorf("a %d-bit prime, at least %d bits are needed", bits, minDHBits)
	}
	return nil
}
