package renderer

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// addServerFeatures writes the server features the annotations stage put
// on s (server-alias, ssl-ciphers, ssl-prefer-server-ciphers), each value
// checked again.
func (v *serverView) addServerFeatures(s *bus.Server, src sources) error {
	if s.Hostname == bus.DefaultServerName {
		return nil // the catch-all server takes no aliases or ciphers
	}
	for _, alias := range s.Aliases {
		if len(alias) > 253 || !features.AliasPattern.MatchString(alias) || alias == s.Hostname {
			return fmt.Errorf("invalid server alias %q", alias)
		}
		name, err := serverName(alias)
		if err != nil {
			return err
		}
		v.ServerName += " " + name
	}
	if s.SSLCiphers == "" && s.SSLPreferServerCiphers == nil {
		return nil
	}
	v.SSLSource = v.HeaderSource
	if s.ServerFeaturesFrom != "" {
		v.SSLSource = src.ingress(s.ServerFeaturesFrom)
	}
	if s.SSLCiphers != "" {
		if len(s.SSLCiphers) > 2048 || !features.CipherPattern.MatchString(s.SSLCiphers) {
			return fmt.Errorf("invalid ssl ciphers of server %s", s.Hostname)
		}
		q, err := quote(s.SSLCiphers)
		if err != nil {
			return err
		}
		v.SSLCiphers = q
	}
	if p := s.SSLPreferServerCiphers; p != nil {
		v.SSLPreferServerCiphers = "off"
		if *p {
			v.SSLPreferServerCiphers = "on"
		}
	}
	return nil
}
