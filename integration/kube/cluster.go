// Package kube runs a real Kubernetes API server for tests: Debian's etcd and
// a kube-apiserver built from the Go module proxy (build-apiserver.sh), plus
// network namespaces for backends whose addresses the API server accepts in
// EndpointSlices. Nothing else runs: no kubelet, no controller-manager; tests
// create the objects (EndpointSlices included) themselves.
package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"switchyard.dev/switchyard/internal/freeport"
)

// RequireEnv makes a missing kube-apiserver, etcd or network-namespace support
// a failure instead of a skip. `make test` sets it.
const RequireEnv = "SWITCHYARD_REQUIRE_NGINX"

// KubeVersion is the kube-apiserver the tests run (see build-apiserver.sh).
const KubeVersion = "v1.36.3"

// ServiceCIDR is the API server's --service-cluster-ip-range.
const ServiceCIDR = "10.96.0.0/12"

// AdminUser is the user name in the admin client certificate (group
// system:masters).
const AdminUser = "switchyard-admin"

// Environment variables that point at binaries instead of the defaults.
const (
	// APIServerEnv is the path of a kube-apiserver binary to use instead of
	// the cached build.
	APIServerEnv = "SWITCHYARD_KUBE_APISERVER"
	// EtcdEnv is the path of an etcd binary to use instead of etcd on PATH.
	EtcdEnv = "SWITCHYARD_ETCD"
)

// Cluster is a real etcd + kube-apiserver for tests.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig file for the admin user
	// (system:masters), with the certificates inline.
	Kubeconfig string
	// Config is the admin user's client configuration.
	Config *rest.Config
	// Client is a clientset built from Config.
	Client kubernetes.Interface
	// Host is the API server's URL, https://127.0.0.1:PORT (the same across
	// StopAPIServer/StartAPIServer).
	Host string
	// EtcdURL is etcd's client URL, http://127.0.0.1:PORT.
	EtcdURL string
	// Dir holds the certificates, etcd's data and the logs; removed at cleanup.
	Dir string

	apiserverBin  string
	apiserverArgs []string
	ca            *certAuthority

	mu        sync.Mutex
	apiserver *process
	etcd      *process
	restarts  int
}

// Start builds (via build-apiserver.sh) or finds the kube-apiserver binary,
// starts etcd and kube-apiserver on free loopback ports, and waits until the
// API server is ready. The admin user authenticates with a client certificate
// (group system:masters); authorization is Node,RBAC. Everything is stopped
// and removed at cleanup.
//
// Start skips the test when a binary is missing, unless RequireEnv is set, in
// which case it fails it.
func Start(t testing.TB) *Cluster {
	t.Helper()
	apiserverBin := findAPIServer(t)
	etcdBin := findEtcd(t)

	dir := t.TempDir()
	c := &Cluster{Dir: dir, apiserverBin: apiserverBin}
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(c.stopAll)

	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := newCertAuthority()
	if err != nil {
		t.Fatalf("kube: CA: %v", err)
	}
	c.ca = ca
	if err := c.writePKI(pki); err != nil {
		t.Fatalf("kube: certificates: %v", err)
	}

	if err := c.startEtcd(etcdBin); err != nil {
		t.Fatalf("kube: etcd: %v", err)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freeport.Loopback()
		if err != nil {
			t.Fatal(err)
		}
		c.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
		c.apiserverArgs = c.apiserverFlags(pki, port)
		c.Config, c.Kubeconfig, err = c.userConfig(AdminUser, []string{"system:masters"}, filepath.Join(dir, "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		if lastErr = c.startAPIServer(); lastErr == nil {
			break
		}
		if !errors.Is(lastErr, errPortInUse) {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("kube: kube-apiserver: %v", lastErr)
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.waitReady(90 * time.Second); err != nil {
		t.Fatalf("kube: %v", err)
	}
	t.Logf("kube: API server %s (etcd %s, files in %s)", c.Host, c.EtcdURL, c.Dir)
	return c
}

// StopAPIServer stops the API server process only (SIGTERM, then SIGKILL);
// etcd keeps running, so the objects survive. For resilience tests.
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	c.mu.Unlock()
	if p == nil {
		t.Fatal("kube: StopAPIServer: the API server is not running")
	}
	p.stop(20 * time.Second)
}

// StartAPIServer starts the API server again after StopAPIServer, on the same
// address and with the same certificates, and waits until it is ready.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	running := c.apiserver != nil
	c.mu.Unlock()
	if running {
		t.Fatal("kube: StartAPIServer: the API server is already running")
	}
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The port may linger for a moment after the old process is gone.
		if err = c.startAPIServer(); err == nil || !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("kube: restarting kube-apiserver: %v", err)
	}
	if err := c.waitReady(90 * time.Second); err != nil {
		t.Fatalf("kube: %v", err)
	}
}

// User returns a kubeconfig file and a client configuration for a user
// authenticated by a client certificate from the cluster's CA (CN name,
// O groups). RBAC grants it nothing until the test binds roles to the user
// or to one of its groups.
func (c *Cluster) User(t testing.TB, name string, groups ...string) (kubeconfig string, cfg *rest.Config) {
	t.Helper()
	f, err := os.CreateTemp(c.Dir, "kubeconfig-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg, kubeconfig, err = c.userConfig(name, groups, f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, cfg
}

func (c *Cluster) stopAll() {
	c.mu.Lock()
	a, e := c.apiserver, c.etcd
	c.apiserver, c.etcd = nil, nil
	c.mu.Unlock()
	if a != nil {
		a.stop(20 * time.Second)
	}
	if e != nil {
		e.stop(10 * time.Second)
	}
}

// ---- binaries ----

var buildMu sync.Mutex

// skipOrFatal skips the test, or fails it when RequireEnv is set.
func skipOrFatal(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s (%s is set, so this is a failure, not a skip)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// APIServerPath is where build-apiserver.sh puts the binary.
func APIServerPath() string {
	root := os.Getenv("SWITCHYARD_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		root = filepath.Join(home, ".cache", "switchyard")
	}
	return filepath.Join(root, "kube-apiserver-"+KubeVersion, "kube-apiserver")
}

func findAPIServer(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(APIServerEnv); p != "" {
		if isExecutable(p) {
			return p
		}
		skipOrFatal(t, "kube: %s=%s is not an executable file", APIServerEnv, p)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p := APIServerPath(); isExecutable(p) {
		return p
	}
	if testing.Short() && os.Getenv(RequireEnv) == "" {
		t.Skip("kube: kube-apiserver is not built yet and -short is set (run integration/kube/build-apiserver.sh)")
	}
	script, err := buildScript()
	if err != nil {
		skipOrFatal(t, "kube: cannot build kube-apiserver: %v", err)
	}
	t.Logf("kube: building kube-apiserver %s with %s (about 5 minutes the first time)", KubeVersion, script)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		skipOrFatal(t, "kube: building kube-apiserver failed (%v):\n%s", err, tail(stderr.String(), 4000))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	p := strings.TrimSpace(lines[len(lines)-1])
	if !isExecutable(p) {
		skipOrFatal(t, "kube: build-apiserver.sh printed %q, which is not an executable file", p)
	}
	t.Logf("kube: kube-apiserver built in %s: %s", time.Since(start).Round(time.Second), p)
	return p
}

// buildScript finds build-apiserver.sh next to this file, or under the module
// root above the working directory.
func buildScript() (string, error) {
	const name = "build-apiserver.sh"
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "integration", "kube", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found", name)
		}
		dir = parent
	}
}

func findEtcd(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EtcdEnv); p != "" {
		if isExecutable(p) {
			return p
		}
		skipOrFatal(t, "kube: %s=%s is not an executable file", EtcdEnv, p)
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if isExecutable("/usr/bin/etcd") {
		return "/usr/bin/etcd"
	}
	skipOrFatal(t, "kube: etcd not found (apt-get install etcd-server)")
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// ---- processes ----

var errPortInUse = errors.New("address already in use")

// process is a child process whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid once done is closed
}

func startProcess(name, logPath string, env []string, bin string, args ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "---- %s %s\n", time.Now().Format(time.RFC3339), strings.Join(append([]string{bin}, args...), " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL, // never outlive a test binary that dies
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL to the process group after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// logTail is the end of the process's log, for error messages.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), 6000)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// childEnv is the environment without ETCD_* variables (etcd refuses to start
// when a variable and a flag both set an option).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}

// ---- etcd ----

func (c *Cluster) startEtcd(bin string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		clientPort, err := freeport.Loopback()
		if err != nil {
			return err
		}
		peerPort, err := freeport.Loopback()
		if err != nil {
			return err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
		peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
		data := filepath.Join(c.Dir, fmt.Sprintf("etcd-%d", attempt))
		p, err := startProcess("etcd", filepath.Join(c.Dir, "etcd.log"), childEnv(), bin,
			"--name=switchyard",
			"--data-dir="+data,
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=switchyard="+peer,
			"--initial-cluster-state=new",
			"--logger=zap",
			"--log-level=warn",
		)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.etcd = p
		c.mu.Unlock()
		if lastErr = waitHTTP(p, client+"/health", nil, 30*time.Second, func(body []byte) bool {
			return bytes.Contains(body, []byte(`"health":"true"`))
		}); lastErr == nil {
			c.EtcdURL = client
			return nil
		}
		p.stop(5 * time.Second)
		c.mu.Lock()
		c.etcd = nil
		c.mu.Unlock()
		if !strings.Contains(p.logTail(), "address already in use") {
			break
		}
	}
	return lastErr
}

// waitHTTP polls url until ok accepts a 200 response, the process exits, or
// the timeout passes.
func waitHTTP(p *process, url string, client *http.Client, timeout time.Duration, ok func([]byte) bool) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); its log:\n%s", p.name, p.err, p.logTail())
		}
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && ok(body) {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, tail(string(body), 2000))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (last: %s); its log:\n%s", p.name, timeout, last, p.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- kube-apiserver ----

func (c *Cluster) apiserverFlags(pki string, port int) []string {
	f := func(name string) string { return filepath.Join(pki, name) }
	return []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoints of the default/kubernetes Service would be 127.0.0.1,
		// which validation rejects: do not maintain them (the Service exists).
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + f("apiserver.crt"),
		"--tls-private-key-file=" + f("apiserver.key"),
		"--client-ca-file=" + f("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f("sa.pub"),
		"--service-account-signing-key-file=" + f("sa.key"),
		"--authorization-mode=Node,RBAC",
		"--anonymous-auth=false",
		"--service-cluster-ip-range=" + ServiceCIDR,
		// The default plugins, less ServiceAccount: it would reject every Pod
		// until a controller-manager created the default ServiceAccount.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	}
}

// startAPIServer starts the process and returns once it listens (not yet
// ready).
func (c *Cluster) startAPIServer() error {
	c.mu.Lock()
	c.restarts++
	n := c.restarts
	c.mu.Unlock()
	p, err := startProcess("kube-apiserver", filepath.Join(c.Dir, "kube-apiserver.log"), childEnv(), c.apiserverBin, c.apiserverArgs...)
	if err != nil {
		return err
	}
	// Wait for /livez, which answers before the post-start hooks are done.
	err = waitHTTP(p, c.Host+"/livez", c.httpClient(), 90*time.Second, func([]byte) bool { return true })
	if err != nil {
		p.stop(5 * time.Second)
		if strings.Contains(p.logTail(), "address already in use") {
			return fmt.Errorf("start %d: %w: %v", n, errPortInUse, err)
		}
		return fmt.Errorf("start %d: %v", n, err)
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	return nil
}

// httpClient authenticates as the admin user.
func (c *Cluster) httpClient() *http.Client {
	rt, err := rest.TransportFor(c.Config)
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: rt, Timeout: 5 * time.Second}
}

// waitReady waits for /readyz and for the default namespace.
func (c *Cluster) waitReady(timeout time.Duration) error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		return errors.New("kube-apiserver is not running")
	}
	start := time.Now()
	if err := waitHTTP(p, c.Host+"/readyz", c.httpClient(), timeout, func(b []byte) bool { return true }); err != nil {
		return err
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		cancel()
		if err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("kube-apiserver exited (%v); its log:\n%s", p.err, p.logTail())
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("namespace default not created after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- certificates ----

type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newCertAuthority() (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "switchyard-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// issue returns a certificate and key (PEM) signed by the CA.
func (ca *certAuthority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func (c *Cluster) writePKI(dir string) error {
	servingCert, servingKey, err := c.ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 96, 0, 1)},
	})
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":        c.ca.certPEM,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"sa.key":        pemBlock("EC PRIVATE KEY", saKeyDER),
		"sa.pub":        pemBlock("PUBLIC KEY", saPubDER),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// userConfig issues a client certificate and writes a kubeconfig for it.
func (c *Cluster) userConfig(user string, groups []string, path string) (*rest.Config, string, error) {
	certPEM, keyPEM, err := c.ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["switchyard-test"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.ca.certPEM,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["switchyard-test"] = &clientcmdapi.Context{Cluster: "switchyard-test", AuthInfo: user}
	kc.CurrentContext = "switchyard-test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return nil, "", err
	}
	cfg := &rest.Config{
		Host: c.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:     200,
		Burst:   400,
		Timeout: 30 * time.Second,
	}
	return cfg, path, nil
}

// LogTail returns the end of the kube-apiserver log (for test failure messages).
func (c *Cluster) LogTail() string {
	b, err := os.ReadFile(filepath.Join(c.Dir, "kube-apiserver.log"))
	if err != nil {
		return err.Error()
	}
	return tail(string(b), 6000)
}
