package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
)

// TestBusNodeOptions: a bus node needs the identities and, in a cluster,
// the route password; its routes carry that password.
func TestBusNodeOptions(t *testing.T) {
	dir := t.TempDir()
	if err := writeBusKeys(dir); err != nil {
		t.Fatal(err)
	}
	// A node's mount: the public keys and the route password, no seed.
	auth := t.TempDir()
	for _, id := range bus.Identities {
		if err := os.Rename(bus.PublicKeyFile(dir, id), bus.PublicKeyFile(auth, id)); err != nil {
			t.Fatal(err)
		}
	}
	pass := filepath.Join(dir, clusterPasswordFile)
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                        string
		auth, nodeName, routes, pwd string
		wantErr                     string
	}{
		{"single node", auth, "n0", "", "", ""},
		{"cluster", auth, "n0", "10.0.0.1:6222,10.0.0.2:6222", pass, ""},
		{"no identities", "", "n0", "", "", "--nats-keys"},
		{"a directory without keys", t.TempDir(), "n0", "", "", "no <identity>.nk"},
		{"no name", auth, "", "", "", "--name"},
		{"routes without a password", auth, "n0", "10.0.0.1:6222", "", "--cluster-password-file"},
		{"an empty password", auth, "n0", "10.0.0.1:6222", empty, "is empty"},
		{"a route without a port", auth, "n0", "10.0.0.1", pass, "--routes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := busServerOptions(tt.auth, tt.nodeName, "127.0.0.1:4222", "", t.TempDir())
			if err == nil && tt.routes != "" {
				err = clusterOptions(opts, "127.0.0.1:6222", tt.routes, tt.pwd)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(opts.Nkeys) != len(bus.Identities) || !opts.JetStream || opts.MaxPayload != bus.MaxPayload {
				t.Fatalf("%d identities, JetStream %v, max payload %d", len(opts.Nkeys), opts.JetStream, opts.MaxPayload)
			}
			for _, r := range opts.Routes {
				if p, _ := r.User.Password(); p == "" || r.User.Username() != opts.Cluster.Username || p != opts.Cluster.Password {
					t.Fatalf("route %s does not authenticate as the cluster", r.Host)
				}
			}
		})
	}
}

// TestOwnResult: an applier's metrics count only its own results when
// several appliers share the bus; run's (no instance) count every one.
func TestOwnResult(t *testing.T) {
	result := func(instance string) *nats.Msg {
		return &nats.Msg{Header: bus.Meta{Stage: bus.StageApplier, Instance: instance}.Header()}
	}
	tests := []struct {
		name, self, from string
		want             bool
	}{
		{"its own", "applier-a", "applier-a", true},
		{"another applier's", "applier-a", "applier-b", false},
		{"run counts all", "", "applier-b", true},
	}
	for _, tt := range tests {
		if got := ownResult(&options{instance: tt.self}, result(tt.from)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNodeTLSOptions: a node's certificate and key go together, and a
// cluster with TLS needs the CA its routes verify each other with.
func TestNodeTLSOptions(t *testing.T) {
	dir := t.TempDir()
	cert, key, err := nginx.SelfSignedCertificate("bus", []string{"bus"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for file, data := range map[string][]byte{certFile: cert, keyFile: key} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name           string
		cluster        bool
		cert, key, ca  string
		wantErr        string
		wantClientsTLS bool
	}{
		{"in clear", false, "", "", "", "", false},
		{"single node", false, certFile, keyFile, "", "", true},
		{"cluster", true, certFile, keyFile, certFile, "", true},
		{"cluster without CA", true, certFile, keyFile, "", "--tls-ca", false},
		{"key without certificate", false, "", keyFile, "", "go together", false},
		{"CA alone", false, "", "", certFile, "--tls-ca needs", false},
		{"unreadable certificate", false, filepath.Join(dir, "none"), keyFile, "", "--tls-cert", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &server.Options{}
			if tt.cluster {
				opts.Cluster.Port = 6222
			}
			err := nodeTLS(opts, tt.cert, tt.key, tt.ca)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("nodeTLS: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.TLS != tt.wantClientsTLS || (opts.TLSConfig != nil) != tt.wantClientsTLS {
				t.Errorf("clients TLS %v (config %v), want %v", opts.TLS, opts.TLSConfig != nil, tt.wantClientsTLS)
			}
			if tt.cluster && (opts.Cluster.TLSConfig == nil || opts.Cluster.TLSConfig.RootCAs == nil ||
				opts.Cluster.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert) {
				t.Errorf("routes do not verify each other: %+v", opts.Cluster.TLSConfig)
			}
		})
	}
}
