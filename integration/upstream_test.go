package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/fcgi"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"switchyard.dev/switchyard/integration/harness"
)

const upstreamPrefix = "nginx.ingress.kubernetes.io/"

// tlsBackendReply is what the test HTTPS backends answer: what they saw of
// the TLS connection NGINX opened.
type tlsBackendReply struct {
	SNI, ClientCN, Forwarded string
}

// startTLSBackend serves HTTPS on loopback with cert; with clientCA set it
// requires a client certificate that CA signed.
func startTLSBackend(t *testing.T, certPEM, keyPEM, clientCA []byte) int {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(clientCA)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := tlsBackendReply{SNI: r.TLS.ServerName, Forwarded: r.Header.Get("X-Forwarded-Host")}
		if len(r.TLS.PeerCertificates) > 0 {
			reply.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_ = json.NewEncoder(w).Encode(reply)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// startGRPCBackend serves the gRPC health service on loopback, over TLS
// when cert is given; it reports the X-Forwarded-Host it was sent as the
// service name it checks, so the test sees the headers arrived.
func startGRPCBackend(t *testing.T, certPEM, keyPEM []byte) int {
	t.Helper()
	var opts []grpc.ServerOption
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}})))
	}
	srv := grpc.NewServer(append(opts, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		_ = grpc.SetHeader(ctx, metadata.Pairs("seen-forwarded-host", strings.Join(md.Get("x-forwarded-host"), ",")))
		return handler(ctx, req)
	}))...)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

// startFastCGIBackend serves FastCGI (Go's net/http/fcgi) on loopback; it
// answers with the CGI variables it was given.
func startFastCGIBackend(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = fcgi.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			env := fcgi.ProcessEnv(r)
			_ = json.NewEncoder(w).Encode(map[string]string{
				"uri": r.URL.RequestURI(), "method": r.Method, "script": env["SCRIPT_FILENAME"], "host": r.Host,
				"appEnv": env["APP_ENV"], "originalURI": env["ORIGINAL_URI"],
			})
		}))
	}()
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// withTLS adds a spec.tls entry for host with secret to an Ingress YAML.
func withTLS(ingressYAML, host, secret string) string {
	return strings.Replace(ingressYAML, "spec:\n", fmt.Sprintf("spec:\n  tls:\n  - hosts: [%s]\n    secretName: %s\n", host, secret), 1)
}

// grpcCheck calls the health service through NGINX's HTTPS listener as
// host, and returns the status and the X-Forwarded-Host the backend saw.
func grpcCheck(addr, host string) (string, string, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{ServerName: host, InsecureSkipVerify: true})),
		grpc.WithAuthority(host))
	if err != nil {
		return "", "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var header metadata.MD
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	if err != nil {
		return "", "", err
	}
	return resp.GetStatus().String(), strings.Join(header.Get("seen-forwarded-host"), ","), nil
}

// grpcWatch opens the health service's server-streaming Watch through
// NGINX and reads its first message: streaming works end to end.
func grpcWatch(addr, host string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{ServerName: host, InsecureSkipVerify: true})),
		grpc.WithAuthority(host))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	if msg.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("streamed status %s", msg.GetStatus())
	}
	return nil
}

// TestBackendProtocolThroughNginx: backend-protocol HTTPS, GRPC and GRPCS
// reach real backends of those protocols; proxy-ssl-secret, -verify, -name
// and -server-name make NGINX verify the backend and present a client
// certificate; TLS that cannot be set up fails closed.
func TestBackendProtocolThroughNginx(t *testing.T) {
	backendCert, backendKey := harness.SelfSigned(t, "backend.internal")
	clientCert, clientKey := harness.ClientCertificate(t, "ingress-client")
	otherCA, _ := harness.SelfSigned(t, "someone-else")
	hostCert, hostKey := harness.SelfSigned(t, "grpc.example.com")

	e := newBackends(t)
	e.write("backends.yaml", strings.Join([]string{
		harness.ServiceYAML("default", "tls-plain", startTLSBackend(t, backendCert, backendKey, nil)),
		harness.ServiceYAML("default", "tls-mutual", startTLSBackend(t, backendCert, backendKey, clientCert)),
		harness.ServiceYAML("default", "grpc", startGRPCBackend(t, nil, nil)),
		harness.ServiceYAML("default", "grpcs", startGRPCBackend(t, backendCert, backendKey)),
		harness.ServiceYAML("default", "fcgi", startFastCGIBackend(t)),
	}, "---\n"))
	e.write("fcgi-params.yaml", defaultConfigMapYAML("fcgi-params", map[string]string{"APP_ENV": "production", "ORIGINAL_URI": "$request_uri"}))
	e.write("secrets.yaml", strings.Join([]string{
		secretYAML("default", "backend-trust", map[string]string{"ca.crt": string(backendCert), "tls.crt": string(clientCert), "tls.key": string(clientKey)}),
		secretYAML("default", "wrong-trust", map[string]string{"ca.crt": string(otherCA)}),
		tlsSecretYAML("default", "grpc-host", hostCert, hostKey),
	}, "---\n"))
	ing := func(name, service string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[upstreamPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: service})
	}
	e.write("ingresses.yaml", strings.Join([]string{
		ing("https", "tls-plain", map[string]string{"backend-protocol": "HTTPS"}),
		ing("mutual", "tls-mutual", map[string]string{"backend-protocol": "HTTPS", "proxy-ssl-secret": "backend-trust",
			"proxy-ssl-verify": "on", "proxy-ssl-name": "backend.internal", "proxy-ssl-server-name": "on"}),
		ing("wrongca", "tls-plain", map[string]string{"backend-protocol": "HTTPS", "proxy-ssl-secret": "wrong-trust", "proxy-ssl-verify": "on",
			"proxy-ssl-name": "backend.internal"}),
		ing("noca", "tls-plain", map[string]string{"backend-protocol": "HTTPS", "proxy-ssl-verify": "on"}),
		ing("plain", "tls-plain", nil),
		ing("php", "fcgi", map[string]string{"backend-protocol": "FCGI", "fastcgi-index": "index.php", "fastcgi-params-configmap": "fcgi-params"}),
		withTLS(ing("grpc", "grpc", map[string]string{"backend-protocol": "GRPC"}), "grpc.example.com", "grpc-host"),
		withTLS(strings.ReplaceAll(ing("grpcs", "grpcs", map[string]string{"backend-protocol": "GRPCS"}), "grpcs.example.com", "grpc2.example.com"), "grpc2.example.com", "grpc-host"),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir)

	var reply tlsBackendReply
	harness.WaitFor(t, changeTimeout, "the HTTPS backend through backend-protocol HTTPS", func() error {
		r, err := e.sy.Get("https.example.com", "/")
		if err != nil {
			return err
		}
		if r.Status != 200 {
			return fmt.Errorf("got %d %s", r.Status, truncate(r.Body))
		}
		return json.Unmarshal(r.Body, &reply)
	})
	if reply.SNI != "" || reply.ClientCN != "" || reply.Forwarded != "https.example.com" {
		t.Errorf("plain HTTPS: backend saw %+v, want no SNI, no client certificate, X-Forwarded-Host https.example.com", reply)
	}
	r := e.eventually("mutual.example.com", "/", "a verified backend with a client certificate", status(200))
	if err := json.Unmarshal(r.Body, &reply); err != nil || reply.SNI != "backend.internal" || reply.ClientCN != "ingress-client" {
		t.Errorf("mutual TLS: backend saw %+v (%v), want SNI backend.internal and client ingress-client", reply, err)
	}
	e.eventually("wrongca.example.com", "/", "a backend the CA does not vouch for to be refused", status(502))
	e.eventually("noca.example.com", "/", "verify without a CA to fail closed", status(503))
	e.eventually("plain.example.com", "/", "plain HTTP to a TLS backend to fail as in ingress-nginx", status(400))

	r = e.eventually("php.example.com", "/app/x?y=1", "a FastCGI backend through backend-protocol FCGI", status(200))
	var cgi map[string]string
	if err := json.Unmarshal(r.Body, &cgi); err != nil || cgi["uri"] != "/app/x?y=1" || cgi["method"] != "GET" || cgi["host"] != "php.example.com" {
		t.Errorf("FastCGI backend saw %v (%v)", cgi, err)
	}
	if cgi["appEnv"] != "production" || cgi["originalURI"] != "/app/x?y=1" {
		t.Errorf("fastcgi-params-configmap: the backend saw APP_ENV %q and ORIGINAL_URI %q", cgi["appEnv"], cgi["originalURI"])
	}
	r = e.eventually("php.example.com", "/app/", "fastcgi-index", status(200))
	if err := json.Unmarshal(r.Body, &cgi); err != nil || !strings.HasSuffix(cgi["script"], "/app/index.php") {
		t.Errorf("FastCGI backend saw SCRIPT_FILENAME %q for /app/ (%v), want it to end in /app/index.php", cgi["script"], err)
	}

	harness.WaitFor(t, changeTimeout, "gRPC through backend-protocol GRPC", func() error {
		st, fwd, err := grpcCheck(e.sy.HTTPSAddr, "grpc.example.com")
		if err == nil && (st != "SERVING" || fwd != "grpc.example.com") {
			err = fmt.Errorf("status %s, backend saw X-Forwarded-Host %q", st, fwd)
		}
		return err
	})
	if err := grpcWatch(e.sy.HTTPSAddr, "grpc.example.com"); err != nil {
		t.Errorf("a server-streaming gRPC call through NGINX: %v", err)
	}
	harness.WaitFor(t, changeTimeout, "gRPC over TLS through backend-protocol GRPCS", func() error {
		st, _, err := grpcCheck(e.sy.HTTPSAddr, "grpc2.example.com")
		if err == nil && st != "SERVING" {
			err = fmt.Errorf("status %s", st)
		}
		return err
	})
}
