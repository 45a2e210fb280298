package renderer

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
)

// clientAuthView is a server's mutual TLS (auth-tls-*), every value
// checked again and quoted.
type clientAuthView struct {
	// Source attributes the lines to the Ingress that asked for them.
	Source string
	// CAFile and CRLFile ("" for none) are quoted paths of Secret-derived
	// files (authFiles writes them).
	CAFile, CRLFile string
	Verify          string
	Depth           int
	// ErrorPage (quoted) replaces NGINX's 400 for a missing or failed
	// certificate; MatchCN (quoted) is the regex the subject must match.
	ErrorPage, MatchCN string
	// Mode is $switchyard_client_auth: "on", or "pass" to send the
	// certificate upstream too (the http block's maps read it).
	Mode string
	// RequireTLS refuses plain HTTP with 403 (verify on): the certificate
	// cannot be checked there.
	RequireTLS bool
}

// ClientCAFile and ClientCRLFile are the files of a server's mutual TLS,
// named by their content.
func ClientCAFile(c *bus.ClientAuth) string {
	return secretDir + contentName(c.CAPEM) + ".client-ca.pem"
}
func ClientCRLFile(c *bus.ClientAuth) string {
	return secretDir + contentName(c.CRLPEM) + ".client-crl.pem"
}

// newClientAuthView resolves s.ClientAuth; nil without one.
func newClientAuthView(s *bus.Server, src sources) (*clientAuthView, error) {
	c := s.ClientAuth
	if c == nil || s.Hostname == bus.DefaultServerName {
		return nil, nil
	}
	if err := (&bus.Features{ClientAuth: c}).Validate(); err != nil {
		return nil, fmt.Errorf("server %s: %w", s.Hostname, err)
	}
	v := &clientAuthView{Source: src.ingress(s.ClientAuthFrom), Verify: c.Verify, Depth: c.Depth, Mode: "on", RequireTLS: c.Verify == "on"}
	if c.PassCertificate {
		v.Mode = "pass"
	}
	var err error
	if v.CAFile, err = quote(ClientCAFile(c)); err != nil {
		return nil, err
	}
	if c.CRLPEM != "" {
		if v.CRLFile, err = quote(ClientCRLFile(c)); err != nil {
			return nil, err
		}
	}
	if c.ErrorPage != "" {
		if v.ErrorPage, err = quote(c.ErrorPage); err != nil {
			return nil, err
		}
	}
	if c.MatchCN != "" {
		if v.MatchCN, err = quote(c.MatchCN); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// clientAuthFiles adds the files of s's mutual TLS to files.
func clientAuthFiles(s *bus.Server, files map[string]string) {
	if c := s.ClientAuth; c != nil && s.Hostname != bus.DefaultServerName {
		files[ClientCAFile(c)] = c.CAPEM
		if c.CRLPEM != "" {
			files[ClientCRLFile(c)] = c.CRLPEM
		}
	}
}
