package renderer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// upstreamView is how a proxied location reaches its backend (upstream
// plugin): the pass directive, and for gRPC the headers and timeouts that
// the http block sets for proxy_pass only, and the TLS to the backend.
type upstreamView struct {
	// Pass is the pass directive without its ";".
	Pass string
	// GRPC: the location repeats the upstream headers as grpc_set_header.
	// Timeouts are grpc_* or fastcgi_*_timeout lines: the proxy timeouts
	// for a pass that does not read proxy_*.
	GRPC         bool
	Timeouts     []string
	ProxyHeaders proxyHeadersView // the http block's choices, for the headers
	// TLSLines are the proxy_ssl_* (or grpc_ssl_*) directives, without ";".
	TLSLines []string
	// FastCGI: the location sends the standard FastCGI parameters;
	// FastCGIIndex is fastcgi_index's quoted argument, "" when not set.
	FastCGI      bool
	FastCGIIndex string
	// FastCGIParams are fastcgi-params-configmap's, value quoted with its
	// variables.
	FastCGIParams []headerView
}

// newUpstreamView resolves the location's pass and backend TLS, nil for
// plain HTTP (the template's proxy_pass http://upstream_balancer); the
// timeouts a gRPC location needs are the location's proxy-*-timeout, else
// the ConfigMap's, as ingress-nginx writes them.
func newUpstreamView(f *bus.Features, s bus.Settings) (*upstreamView, error) {
	if f == nil || f.Upstream == nil {
		return nil, nil
	}
	v := &upstreamView{Pass: "proxy_pass http://upstream_balancer"}
	u := f.Upstream
	module := "proxy"
	switch u.Protocol {
	case features.ProtocolHTTPS:
		v.Pass = "proxy_pass https://upstream_balancer"
	case features.ProtocolGRPC, features.ProtocolGRPCS:
		module, v.GRPC = "grpc", true
		v.Pass = "grpc_pass grpc://upstream_balancer"
		if u.Protocol == features.ProtocolGRPCS {
			v.Pass = "grpc_pass grpcs://upstream_balancer"
		}
		v.Timeouts = passTimeouts("grpc", f.Proxy, s)
		v.ProxyHeaders = newProxyHeadersView(s)
	case features.ProtocolFCGI:
		// FastCGI has no TLS: the backend is reached in the clear.
		v.Pass, v.FastCGI = "fastcgi_pass upstream_balancer", true
		v.Timeouts = passTimeouts("fastcgi", f.Proxy, s)
		if u.FastCGIIndex != "" {
			if !features.FastCGIIndexPattern.MatchString(u.FastCGIIndex) {
				return nil, fmt.Errorf("invalid fastcgi index")
			}
			q, err := quote(u.FastCGIIndex)
			if err != nil {
				return nil, err
			}
			v.FastCGIIndex = q
		}
		if err := features.ValidFastCGIParams(u.FastCGIParams); err != nil {
			return nil, err
		}
		for _, p := range u.FastCGIParams {
			q, err := quoteVariables(p.Value)
			if err != nil {
				return nil, err
			}
			v.FastCGIParams = append(v.FastCGIParams, headerView{Name: p.Name, Value: q})
		}
		return v, nil
	}
	if u.TLS != nil {
		lines, err := upstreamTLSLines(module, u.TLS)
		if err != nil {
			return nil, err
		}
		v.TLSLines = lines
		// NGINX keys cached connections and TLS sessions by the backend's
		// address alone: a location that verifies its backend, or shows it
		// a client certificate, must never get a connection or resume a
		// session another location opened with other settings.
		v.TLSLines = append(v.TLSLines, module+"_ssl_session_reuse off")
		v.Pass = strings.Replace(v.Pass, "upstream_balancer", isolatedUpstream, 1)
	}
	return v, nil
}

// isolatedUpstream is upstream_balancer without keepalive (nginx.conf.tmpl).
const isolatedUpstream = "upstream_balancer_tls"

// passTimeouts are module's connect, send and read timeouts: the
// location's proxy-*-timeout, else the ConfigMap's.
func passTimeouts(module string, p *bus.Proxy, s bus.Settings) []string {
	connect, send, read := s.ProxyConnectTimeout, s.ProxySendTimeout, s.ProxyReadTimeout
	if p != nil {
		connect, send, read = orInt(p.ConnectTimeout, connect), orInt(p.SendTimeout, send), orInt(p.ReadTimeout, read)
	}
	return []string{
		module + "_connect_timeout " + strconv.Itoa(connect) + "s",
		module + "_send_timeout " + strconv.Itoa(send) + "s",
		module + "_read_timeout " + strconv.Itoa(read) + "s",
	}
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// upstreamTLSLines writes the TLS directives of module ("proxy" or
// "grpc"): every value was checked by the feature's validation and is
// checked again here as a word, or quoted.
func upstreamTLSLines(module string, t *bus.UpstreamTLS) ([]string, error) {
	var d directives
	p := module + "_ssl_"
	if t.ServerName {
		d.add(p+"server_name", "on")
	}
	if t.Name != "" {
		d.addQuoted(p+"name", t.Name)
	}
	if t.Protocols != "" {
		if !features.UpstreamProtocolsPattern.MatchString(t.Protocols) {
			return nil, fmt.Errorf("invalid upstream TLS protocols")
		}
		d.add(p+"protocols", strings.Fields(t.Protocols)...)
	}
	if t.Ciphers != "" {
		d.addQuoted(p+"ciphers", t.Ciphers)
	}
	if t.CAPEM != "" {
		d.addQuoted(p+"trusted_certificate", UpstreamCAFile(t))
	}
	if t.Verify {
		d.add(p+"verify", "on")
		if t.VerifyDepth > 0 {
			d.add(p+"verify_depth", strconv.Itoa(t.VerifyDepth))
		}
	}
	if t.CertPEM != "" {
		cert, key := UpstreamClientFiles(t)
		d.addQuoted(p+"certificate", cert)
		d.addQuoted(p+"certificate_key", key)
	}
	return d.lines, d.err
}

// UpstreamCAFile and UpstreamClientFiles are the paths of the files an
// upstream TLS setting needs, named by their content (two Ingresses with
// the same Secret share them). They are Secret-derived: render prints
// them redacted.
func UpstreamCAFile(t *bus.UpstreamTLS) string { return secretDir + contentName(t.CAPEM) + ".ca.pem" }

func UpstreamClientFiles(t *bus.UpstreamTLS) (cert, key string) {
	name := contentName(t.CertPEM + t.KeyPEM)
	return secretDir + name + ".crt.pem", secretDir + name + ".key.pem"
}

func contentName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// upstreamFiles are the files a location's upstream TLS needs, by path.
func upstreamFiles(t *bus.UpstreamTLS, files map[string]string) {
	if t.CAPEM != "" {
		files[UpstreamCAFile(t)] = t.CAPEM
	}
	if t.CertPEM != "" {
		cert, key := UpstreamClientFiles(t)
		files[cert], files[key] = t.CertPEM, t.KeyPEM
	}
}
