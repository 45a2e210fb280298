package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// busCommand runs one node of split mode's NATS cluster: nats-server with
// JetStream, in this binary (the same server the all-in-one embeds), so
// split mode needs no second image. Clients authenticate with the bus
// identities of switchyard buskeys (--nats-keys: their public keys, with
// the permissions of this binary's version, so an upgrade never runs on
// an older authorization), and the nodes' routes with the cluster
// password: nobody joins or reads the cluster without them.
func busCommand(args []string) error {
	fs := flag.NewFlagSet("bus", flag.ContinueOnError)
	name := fs.String("name", os.Getenv("POD_NAME"), "this node's name, unique in the cluster (default $POD_NAME)")
	listen := fs.String("listen", "0.0.0.0:4222", "address the stages connect to")
	clusterListen := fs.String("cluster-listen", "0.0.0.0:6222", "address the other nodes' routes connect to")
	monitor := fs.String("monitor-listen", "0.0.0.0:8222", "address of nats-server's monitoring endpoints (/healthz for the probes); empty: off")
	routes := fs.String("routes", "", "comma-separated host:port of every node's cluster address (this node's own included); empty: a single node")
	storeDir := fs.String("store-dir", "/var/lib/switchyard/bus", "where JetStream keeps the streams")
	keys := fs.String("nats-keys", "", "directory of the identities' public keys (<identity>.pub) or seeds, as switchyard buskeys writes them: who may connect (required)")
	passFile := fs.String("cluster-password-file", "", "the cluster.pass of switchyard buskeys: the routes' password (required with --routes)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate of this node (e.g. a kubernetes.io/tls Secret's tls.crt): stages and routes then connect with TLS only")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsCA := fs.String("tls-ca", "", "PEM CA that signed every node's certificate (with --routes and --tls-cert: nodes verify each other's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts, err := busServerOptions(*keys, *name, *listen, *monitor, *storeDir)
	if err != nil {
		return err
	}
	if *routes != "" {
		if err := clusterOptions(opts, *clusterListen, *routes, *passFile); err != nil {
			return err
		}
	}
	if err := nodeTLS(opts, *tlsCert, *tlsKey, *tlsCA); err != nil {
		return err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	ns.ConfigureLogger()
	ns.Start()
	if !ns.ReadyForConnections(time.Minute) {
		ns.Shutdown()
		return errors.New("bus: not ready after a minute")
	}
	// JetStream parks idle block caches in pools that a quiet process
	// collects rarely, as in the all-in-one (memory.go): the node hands
	// its free pages back after each burst of writes, as a stage does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go releaseAfterBursts(ctx, make(chan struct{}), zap.NewNop())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs
	// Lame duck: clients move to the other nodes before this one goes.
	ns.LameDuckShutdown()
	ns.WaitForShutdown()
	return nil
}

// busServerOptions are a node's options without the cluster: JetStream
// on disk, the identities of keysDir and nothing else.
func busServerOptions(keysDir, name, listen, monitor, storeDir string) (*server.Options, error) {
	if keysDir == "" {
		return nil, errors.New("--nats-keys DIR (of switchyard buskeys) is required: a bus others can reach holds every Secret the controller uses")
	}
	if name == "" {
		return nil, errors.New("--name (or $POD_NAME) is required")
	}
	keys, err := bus.PublicKeys(keysDir)
	if err != nil {
		return nil, fmt.Errorf("--nats-keys: %w", err)
	}
	opts := &server.Options{}
	if opts.Nkeys, err = bus.NkeyUsers(keys); err != nil {
		return nil, err
	}
	opts.ServerName, opts.JetStream, opts.StoreDir, opts.MaxPayload = name, true, storeDir, bus.MaxPayload
	opts.NoSigs = true
	if opts.Host, opts.Port, err = hostPort(listen); err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	if monitor != "" {
		if opts.HTTPHost, opts.HTTPPort, err = hostPort(monitor); err != nil {
			return nil, fmt.Errorf("--monitor-listen: %w", err)
		}
	}
	return opts, nil
}

// clusterOptions join the node to the others at routes, authenticated
// with the password in passFile.
func clusterOptions(opts *server.Options, listen, routes, passFile string) error {
	if passFile == "" {
		return errors.New("--routes needs --cluster-password-file: an open route port would let anyone join the cluster")
	}
	data, err := os.ReadFile(passFile)
	if err != nil {
		return fmt.Errorf("--cluster-password-file: %w", err)
	}
	pass := strings.TrimSpace(string(data))
	if pass == "" {
		return fmt.Errorf("--cluster-password-file %s is empty", passFile)
	}
	opts.Cluster = server.ClusterOpts{Name: "switchyard", Username: "route", Password: pass}
	if opts.Cluster.Host, opts.Cluster.Port, err = hostPort(listen); err != nil {
		return fmt.Errorf("--cluster-listen: %w", err)
	}
	for _, r := range splitList(routes) {
		if _, _, err := net.SplitHostPort(r); err != nil {
			return fmt.Errorf("--routes %q: %w", r, err)
		}
		opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats", User: url.UserPassword("route", pass), Host: r})
	}
	return nil
}

// nodeTLS makes the node's client port, and its routes when it has any,
// TLS only: the tables carry TLS private keys and password hashes, which
// must not cross the pod network in clear. Routes verify each other's
// certificate against ca both ways, as nats-server does for a cluster's
// tls block. Without a certificate the node listens in clear (a
// NetworkPolicy is then all that keeps the traffic private).
func nodeTLS(opts *server.Options, cert, key, ca string) error {
	if cert == "" && key == "" {
		if ca != "" {
			return errors.New("--tls-ca needs --tls-cert and --tls-key")
		}
		return nil
	}
	if cert == "" || key == "" {
		return errors.New("--tls-cert and --tls-key go together")
	}
	clients, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key})
	if err != nil {
		return fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	opts.TLSConfig, opts.TLS, opts.TLSTimeout = clients, true, tlsHandshakeTimeout
	if opts.Cluster.Port == 0 {
		return nil
	}
	if ca == "" {
		return errors.New("--routes with --tls-cert needs --tls-ca: the nodes verify each other's certificate")
	}
	routes, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key, CaFile: ca, Verify: true})
	if err != nil {
		return fmt.Errorf("--tls-ca: %w", err)
	}
	// A node dials routes as a client and accepts them as a server: the
	// CA verifies both ends.
	routes.RootCAs = routes.ClientCAs
	opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = routes, tlsHandshakeTimeout
	return nil
}

// tlsHandshakeTimeout bounds a TLS handshake on the bus, in seconds; on a
// loaded node nats-server's default half second is too short.
const tlsHandshakeTimeout = 5

func hostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	return host, n, err
}
