package features

import (
	"fmt"
	"regexp"
)

// Server are settings of the server (the host) an Ingress's rules are on,
// not of its locations: server-alias, ssl-ciphers and
// ssl-prefer-server-ciphers. Where several Ingresses share a host, the
// oldest that sets a field decides it, as ingress-nginx lets the first
// Ingress in its age order decide server-level settings.
type Server struct {
	// Aliases are other host names the server answers to (server_name).
	Aliases []string `json:"aliases,omitempty"`
	// SSLCiphers is the server's OpenSSL cipher list, "" for the
	// ConfigMap's.
	SSLCiphers string `json:"sslCiphers,omitempty"`
	// SSLPreferServerCiphers is ssl_prefer_server_ciphers, nil for the
	// default (on).
	SSLPreferServerCiphers *bool `json:"sslPreferServerCiphers,omitempty"`
}

// MaxServerAliases bounds server-alias.
const MaxServerAliases = 32

var (
	// AliasPattern is a host name, or a wildcard "*.example.com" (one
	// label, as an Ingress host), lower case.
	AliasPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)
	// CipherPattern keeps a cipher list one NGINX word; its length is
	// checked apart (Go caps repeat counts at 1000).
	CipherPattern = regexp.MustCompile(`^[A-Za-z0-9!:+@._-]+$`)
)

func (s *Server) validate() error {
	if s == nil {
		return nil
	}
	if len(s.Aliases) > MaxServerAliases {
		return fmt.Errorf("%d aliases, at most %d", len(s.Aliases), MaxServerAliases)
	}
	for _, a := range s.Aliases {
		if len(a) > 253 || !AliasPattern.MatchString(a) {
			return fmt.Errorf("alias %q is not a host name", a)
		}
	}
	if s.SSLCiphers != "" && (len(s.SSLCiphers) > 2048 || !CipherPattern.MatchString(s.SSLCiphers)) {
		return fmt.Errorf("ssl ciphers hold a character other than A-Z a-z 0-9 ! : + @ . _ - or are over 2048 bytes")
	}
	return nil
}
