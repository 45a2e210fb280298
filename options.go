package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"switchyard.dev/switchyard/admission"
	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/internal/otelexport"
	"switchyard.dev/switchyard/internal/status"
	"switchyard.dev/switchyard/plugins/builtin"
	"switchyard.dev/switchyard/stages/annotations"
	"switchyard.dev/switchyard/stages/applier"
	"switchyard.dev/switchyard/stages/renderer"
	"switchyard.dev/switchyard/stages/translator"
	"switchyard.dev/switchyard/stages/watcher"
)

// options are the flags every stage may read; `run` and `stage` share them.
type options struct {
	manifests         string
	httpAddr          string
	httpsAddr         string
	stateDir          string
	ingressClass      string
	controllerClass   string
	watchWithoutClass bool
	configMap         string
	kubeconfig        string
	watchNamespace    string
	namespaceSelector string
	publishAddress    string
	publishService    string
	electionID        string
	profilingAddr     string
	metricsAddr       string
	metricsPerHost    bool
	enableMetrics     bool
	statusClasses     bool
	excludeMetrics    string
	timeBuckets       string
	lengthBuckets     string
	sizeBuckets       string
	webhookAddr       string
	defaultSSLCert    string
	webhookCert       string
	webhookKey        string
	resolvers         string
	defaultBackend    string
	pluginDir         string
	annotationsPrefix string
	hostOwnership     string
	nginxBinary       string
	nginxUser         string
	natsListen        string
	natsKeys          string
	logLevel          string
	logFormat         string
	workerProcesses   string
	memoryLimit       string
	modSecurityConfig string
	shutdownGrace     time.Duration
	minReloadInterval time.Duration
	fullBackendPosts  bool
	sslPassthrough    bool
	luaRouting        bool
	otlpEndpoint      string
	// requestSpans exports NGINX's request spans in the process that runs
	// NGINX (startRequestSpans); nil elsewhere. Not a flag.
	requestSpans    *otelexport.RequestSpans
	otelServiceName string
	tcpServices     string
	udpServices     string
	// instance names this process on the bus (stage --instance); "" in
	// run, where one process holds every stage.
	instance string
	// ingressNginx are ingress-nginx's flags Switchyard has none of its
	// own for (flags_ingressnginx.go).
	ingressNginx foreignFlags
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.manifests, "manifests", "", "directory of Kubernetes YAML manifests to serve (watched for changes)")
	fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:8080", "comma-separated addresses NGINX listens on for HTTP (host:port, [IPv6]:port; IPv6 ones are left out where the host has no IPv6)")
	fs.StringVar(&o.httpsAddr, "https-addr", "127.0.0.1:8443", "comma-separated addresses NGINX listens on for HTTPS, as --http-addr")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "switchyard"), "NGINX prefix, rendered configuration, sockets and bus storage (created if missing)")
	fs.StringVar(&o.ingressClass, "ingress-class", "switchyard", "value of the legacy kubernetes.io/ingress.class annotation to serve")
	fs.StringVar(&o.controllerClass, "controller-class", "switchyard.dev/ingress-controller", "IngressClass spec.controller to serve")
	fs.BoolVar(&o.watchWithoutClass, "watch-ingress-without-class", false, "also serve Ingresses that name no class")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to serve (default: in-cluster config when no --manifests is given)")
	fs.StringVar(&o.watchNamespace, "watch-namespace", "", "watch only this namespace (default: all)")
	fs.StringVar(&o.namespaceSelector, "watch-namespace-selector", "", "serve only namespaces whose labels match this selector (needs list/watch on namespaces)")
	fs.StringVar(&o.publishAddress, "publish-status-address", "", "comma-separated IPs or host names written to the status of served Ingresses")
	fs.StringVar(&o.publishService, "publish-service", "", "Service NAMESPACE/NAME whose addresses are written to the status of served Ingresses")
	fs.StringVar(&o.electionID, "election-id", "switchyard-leader", "name of the Lease the replicas elect a status writer with")
	fs.StringVar(&o.configMap, "configmap", "", "controller ConfigMap NAMESPACE/NAME with ingress-nginx settings (from the manifests dir or the API)")
	fs.StringVar(&o.defaultBackend, "default-backend-service", "", "Service NAMESPACE/NAME that answers requests no Ingress matches (default: a built-in 404)")
	fs.StringVar(&o.defaultSSLCert, "default-ssl-certificate", "", "kubernetes.io/tls Secret NAMESPACE/NAME served to TLS clients whose name no Ingress's certificate covers (default: a self-signed certificate)")
	fs.StringVar(&o.resolvers, "resolver", "", "DNS servers NGINX asks for ExternalName Services, comma-separated (default: the nameservers of /etc/resolv.conf)")
	fs.StringVar(&o.modSecurityConfig, "modsecurity-config", "", "ModSecurity configuration file (absolute path) in place of the default, whose SecRuleEngine is DetectionOnly as in ingress-nginx; e.g. one that says SecRuleEngine On to block")
	fs.StringVar(&o.pluginDir, "plugin-dir", "", "directory of third-party annotation plugins (every executable file in it is started)")
	fs.StringVar(&o.hostOwnership, "host-ownership", translator.HostOwnershipAny, "who may add rules to a host: any (every namespace, as ingress-nginx) or namespace (the namespace of the host's oldest Ingress; other namespaces' rules for it are refused)")
	fs.StringVar(&o.annotationsPrefix, "annotations-prefix", bus.DefaultAnnotationsPrefix, "prefix of the annotations the plugins read")
	fs.StringVar(&o.nginxBinary, "nginx-binary", "nginx", "NGINX binary (with the Lua module) to run")
	fs.StringVar(&o.nginxUser, "nginx-user", "nobody", "user NGINX workers run as when switchyard runs as root")
	fs.StringVar(&o.natsListen, "nats-listen", "", "expose the embedded bus on this address (e.g. 127.0.0.1:4222) for trace and remote stages; needs --nats-keys")
	fs.StringVar(&o.natsKeys, "nats-keys", "", "directory of the bus identities' NKey seeds (switchyard buskeys DIR): run's listening bus admits only them, a stage authenticates with DIR/<stage>.nk")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics, ingress-nginx's nginx_ingress_controller_* names), /healthz and /readyz on this address (e.g. :10254); off by default")
	fs.BoolVar(&o.enableMetrics, "enable-metrics", true, "with --metrics-addr, have NGINX count every request for the per-request metrics (nginx_ingress_controller_requests, ...)")
	fs.BoolVar(&o.metricsPerHost, "metrics-per-host", true, "label the per-request metrics with the host (the Ingress host; _ for requests no host rule matches), as ingress-nginx's flag of that name")
	fs.BoolVar(&o.statusClasses, "report-status-classes", false, "label the per-request metrics with status classes (2xx, 3xx, 4xx, 5xx) instead of status codes")
	fs.StringVar(&o.timeBuckets, "time-buckets", "", "bucket bounds of the per-request duration histograms, comma-separated seconds (default ingress-nginx's: 0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10)")
	fs.StringVar(&o.lengthBuckets, "length-buckets", "", "bucket bounds of request_size and response_size, comma-separated bytes (default 10,20,...,100)")
	fs.StringVar(&o.sizeBuckets, "size-buckets", "", "bucket bounds of bytes_sent, comma-separated bytes (default 10,100,...,10000000)")
	fs.StringVar(&o.excludeMetrics, "exclude-socket-metrics", "", "per-request series not to export, comma-separated, e.g. nginx_ingress_controller_request_size,nginx_ingress_controller_header_duration_seconds")
	fs.StringVar(&o.webhookAddr, "validating-webhook", "", "serve the Ingress validating admission webhook on this address (e.g. :8443, path "+admission.Path+"); off by default")
	fs.StringVar(&o.webhookCert, "validating-webhook-certificate", "", "PEM certificate the webhook serves (read again when it changes)")
	fs.StringVar(&o.webhookKey, "validating-webhook-key", "", "PEM private key of the webhook certificate")
	fs.StringVar(&o.profilingAddr, "profiling-addr", "", "serve Go's pprof, and /readyz (200 when every stage reaches the bus), on this address (e.g. 127.0.0.1:6060); off by default")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "console", "console or json")
	fs.StringVar(&o.workerProcesses, "worker-processes", "", "NGINX worker processes; overrides the ConfigMap's worker-processes (default auto)")
	fs.StringVar(&o.memoryLimit, "memory-limit", "", "soft limit of the memory the Go runtime uses, e.g. 220MiB, or off (default: GOMEMLIMIT if set, else "+defaultMemoryLimit+"); it rises with the live heap to keep a quarter of it free")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "how long NGINX may take to drain on shutdown")
	fs.BoolVar(&o.luaRouting, "lua-routing", true, "serve the hosts that need no NGINX directive of their own from one shared server, routed in Lua, so adding, changing or removing them never reloads NGINX (docs/features.md says which annotations keep a host in a server block)")
	fs.BoolVar(&o.sslPassthrough, "enable-ssl-passthrough", false, "route TLS connections by SNI name in NGINX's stream module, so Ingresses with ssl-passthrough get their TLS unterminated (off: the annotation is a warning, as in ingress-nginx)")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "send traces of the pipeline (one per change, one span per stage, the IDs switchyard trace shows) to this OpenTelemetry collector, HOST:PORT over OTLP/gRPC without TLS (e.g. otel-collector.monitoring:4317); off by default")
	fs.StringVar(&o.otelServiceName, "otel-service-name", otelexport.DefaultServiceName, "service.name of the traces sent to --otlp-endpoint")
	fs.StringVar(&o.tcpServices, "tcp-services-configmap", "", "ConfigMap NAMESPACE/NAME of TCP services, as ingress-nginx's: each key a port NGINX listens on, each value NAMESPACE/SERVICE:PORT[:PROXY][:PROXY]")
	fs.StringVar(&o.udpServices, "udp-services-configmap", "", "ConfigMap NAMESPACE/NAME of UDP services, as ingress-nginx's: each key a port NGINX listens on, each value NAMESPACE/SERVICE:PORT")
	fs.BoolVar(&o.fullBackendPosts, "full-backend-posts", false, "post every backend to NGINX on each endpoint change instead of only the changed ones (for comparing the two)")
	o.ingressNginx.register(fs)
	fs.DurationVar(&o.minReloadInterval, "min-reload-interval", applier.DefaultMinReloadInterval, "least time between two NGINX reloads; changes meanwhile wait for one reload together (endpoint and certificate changes never wait)")
}

func (o *options) logger() (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(o.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	if o.logFormat == "console" {
		cfg.Encoding = "console"
		cfg.EncoderConfig = zap.NewDevelopmentEncoderConfig()
	}
	return cfg.Build()
}

func (o *options) prefix() (string, error) {
	abs, err := filepath.Abs(o.stateDir)
	if err != nil {
		return "", err
	}
	return nginx.PrefixFor(abs), nil
}

// local is this process's data plane, as the applier fills it into the
// rendered files: --http-addr, --https-addr and the sockets below
// --state-dir (TLS passthrough's with --enable-ssl-passthrough).
func (o *options) local(log *zap.Logger) (nginx.Local, error) {
	prefix, err := o.prefix()
	if err != nil {
		return nginx.Local{}, err
	}
	ipv6 := canListenIPv6()
	l := nginx.LocalFor(prefix, listenAddrs("--http-addr", o.httpAddr, ipv6, log), listenAddrs("--https-addr", o.httpsAddr, ipv6, log),
		o.sslPassthrough)
	return l, l.Validate()
}

// listenAddrs are the comma-separated addresses of --http-addr or
// --https-addr. Where this host cannot listen on IPv6 at all (a kernel
// without it), the IPv6 ones are left out with a warning, so the same
// manifests (0.0.0.0 and [::], as ingress-nginx listens on both where the
// pod has IPv6) run on every cluster.
func listenAddrs(flag, value string, ipv6 bool, log *zap.Logger) []string {
	var out []string
	for _, addr := range splitList(value) {
		if !ipv6 && nginx.IsIPv6Addr(addr) {
			log.Warn("IPv6 listen address left out: this host cannot listen on IPv6", zap.String("flag", flag), zap.String("address", addr))
			continue
		}
		out = append(out, addr)
	}
	return out
}

// canListenIPv6 says whether this host can open an IPv6 listening socket,
// which NGINX's listen on an IPv6 address needs.
func canListenIPv6() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func (o *options) translatorConfig() (translator.Config, error) {
	ownership, err := translator.ParseHostOwnership(o.hostOwnership)
	if err != nil {
		return translator.Config{}, fmt.Errorf("--host-ownership: %w", err)
	}
	if o.defaultSSLCert != "" {
		if !namespacedNamePattern.MatchString(o.defaultSSLCert) {
			return translator.Config{}, fmt.Errorf("--default-ssl-certificate %q: want NAMESPACE/NAME", o.defaultSSLCert)
		}
	}
	for flag, v := range map[string]string{"tcp-services-configmap": o.tcpServices, "udp-services-configmap": o.udpServices} {
		if v != "" && !namespacedNamePattern.MatchString(v) {
			return translator.Config{}, fmt.Errorf("--%s %q: want NAMESPACE/NAME", flag, v)
		}
	}
	return translator.Config{ControllerClass: o.controllerClass, IngressClass: o.ingressClass, WatchWithoutClass: o.watchWithoutClass,
		ConfigMap: o.configMap, DefaultBackendService: o.defaultBackend, AnnotationsPrefix: o.annotationsPrefix,
		HostOwnership: ownership, DefaultSSLCertificate: o.defaultSSLCert,
		TCPServicesConfigMap: o.tcpServices, UDPServicesConfigMap: o.udpServices, ReservedPorts: o.reservedPorts(),
		IngressClassByName: o.ingressNginx.isTrue("ingress-class-by-name"),
		DisableCatchAll:    o.ingressNginx.isTrue("disable-catch-all"), DisableServiceExternalName: o.ingressNginx.isTrue("disable-svc-external-name"),
	}, nil
}

// reservedPorts are the ports Switchyard's own listeners use, which a TCP
// or UDP service may not take (the Lua endpoint and the passthrough hops
// are unix sockets).
func (o *options) reservedPorts() map[int]string {
	ports := map[int]string{}
	for what, addrs := range map[string]string{
		"--http-addr": o.httpAddr, "--https-addr": o.httpsAddr, "--metrics-addr": o.metricsAddr,
		"--validating-webhook": o.webhookAddr, "--profiling-addr": o.profilingAddr, "--nats-listen": o.natsListen,
	} {
		for _, addr := range splitList(addrs) {
			if _, port, err := net.SplitHostPort(addr); err == nil {
				if n, err := strconv.Atoi(port); err == nil && n > 0 {
					ports[n] = what
				}
			}
		}
	}
	return ports
}

// streamConfigMaps are the TCP and UDP services ConfigMaps configured.
func (o *options) streamConfigMaps() []string {
	var refs []string
	for _, ref := range []string{o.tcpServices, o.udpServices} {
		if ref != "" {
			refs = append(refs, ref)
		}
	}
	return refs
}

// testRefuseEnv names Ingresses ("namespace/name", comma-separated) whose
// locations get a directive NGINX refuses. Tests set it; nothing else
// should.
const testRefuseEnv = "SWITCHYARD_TEST_REFUSE_INGRESS"

func (o *options) rendererConfig() (renderer.Config, error) {
	cfg := renderer.DefaultConfig()
	cfg.WorkerProcesses = o.workerProcesses
	cfg.Resolvers = o.resolverList()
	var err error
	if o.metricsAddr != "" && o.enableMetrics {
		// NGINX counts requests only when something serves them.
		cfg.MetricsDictSize = metricsDictSize
		buckets, err := o.metricsBuckets()
		if err != nil {
			return cfg, err
		}
		cfg.MetricsBuckets = buckets
	}
	// For tests only: the locations of these Ingresses get a directive NGINX
	// refuses (renderer.TestRefusedDirective), so a test can follow a
	// refusal end to end through a path every Ingress renders.
	if v := os.Getenv(testRefuseEnv); v != "" {
		cfg.TestRefuseIngresses = splitList(v)
	}
	cfg.StreamServices = o.tcpServices != "" || o.udpServices != ""
	cfg.LuaRouting = o.luaRouting
	// Request spans go to the ConfigMap's otlp-collector-host, else here.
	cfg.OTLPEndpoint = o.otlpEndpoint
	if cfg.ModSecurity, err = o.modSecurity(cfg.ModulesDir); err != nil {
		return cfg, err
	}
	cfg.SSLPassthrough = o.sslPassthrough
	if w, werr := o.workerUser(); werr != nil {
		err = werr
	} else if w != nil {
		cfg.User, cfg.Group = w.Name, w.Group
	}
	return cfg, err
}

// kubeClient connects to the API server named by --kubeconfig, or the one
// the pod runs in when no source is given; nil when manifests alone are served.
func (o *options) kubeClient() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	// ingress-nginx's --apiserver-host overrides the kubeconfig's server,
	// and --certificate-authority its CA, as client-go's flags do there.
	host, _ := o.ingressNginx.given("apiserver-host")
	switch {
	case o.kubeconfig != "" || host != "":
		cfg, err = clientcmd.BuildConfigFromFlags(host, o.kubeconfig)
		if ca, ok := o.ingressNginx.given("certificate-authority"); ok && ca != "" && err == nil {
			cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = ca, nil
		}
	case o.manifests == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err = rest.InClusterConfig()
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	cfg.UserAgent = "switchyard/" + version
	return kubernetes.NewForConfig(cfg)
}

// podNamespace is where the controller runs (for its Lease), from the
// downward API, else "default".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "default"
}

// metricsBuckets parses --time-buckets, --length-buckets and
// --size-buckets; the renderer checks the bounds.
func (o *options) metricsBuckets() (renderer.MetricsBuckets, error) {
	var b renderer.MetricsBuckets
	for _, f := range []struct {
		flag, value string
		dst         *[]float64
	}{{"time-buckets", o.timeBuckets, &b.Time}, {"length-buckets", o.lengthBuckets, &b.Length}, {"size-buckets", o.sizeBuckets, &b.Size}} {
		for _, field := range splitList(f.value) {
			v, err := strconv.ParseFloat(field, 64)
			if err != nil {
				return b, fmt.Errorf("--%s: %q is not a number", f.flag, field)
			}
			*f.dst = append(*f.dst, v)
		}
	}
	return b, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// resolverList is --resolver, or the nameservers of /etc/resolv.conf.
func (o *options) resolverList() []string {
	if o.resolvers != "" {
		return strings.Split(o.resolvers, ",")
	}
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if ip, err := netip.ParseAddr(fields[1]); err == nil {
			if ip.Is6() {
				out = append(out, "["+ip.String()+"]")
			} else {
				out = append(out, ip.String())
			}
		}
	}
	return out
}

// workerUser is the user NGINX workers drop to; nil unless we run as root,
// in which case workers must never keep root.
func (o *options) workerUser() (*nginx.WorkerUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	w, err := nginx.LookupWorkerUser(o.nginxUser)
	if err != nil {
		return nil, fmt.Errorf("--nginx-user: %w", err)
	}
	return &w, nil
}

// runner is what every stage offers: run until the context ends.
type runner interface {
	Run(ctx context.Context) error
}

// newStage builds one stage by name on a bus connection.
func (o *options) newStage(name string, conn *bus.Conn, log *zap.Logger) (runner, error) {
	log = log.Named(name)
	// Readiness: a stage whose calls to the bus fail says so, once.
	conn.Health().SetLogger(log)
	stageReadiness.add(name, conn)
	switch name {
	case bus.StageWatcher:
		kube, err := o.kubeClient()
		if err != nil {
			return nil, err
		}
		return watcher.New(conn, watcher.Config{
			ManifestsDir: o.manifests, Kube: kube, WatchNamespace: o.watchNamespace, NamespaceSelector: o.namespaceSelector,
			ConfigMap: o.configMap, AnnotationsPrefix: o.annotationsPrefix, DefaultSSLCertificate: o.defaultSSLCert,
			StreamConfigMaps: o.streamConfigMaps(),
			Status: status.Config{
				PublishAddresses: splitList(o.publishAddress), PublishService: o.publishService,
				LeaveStatus: !o.ingressNginx.updateStatus(),
				ElectionID:  o.electionID, ElectionNamespace: podNamespace(), ConfigMap: o.configMap,
				TCPServicesConfigMap: o.tcpServices, UDPServicesConfigMap: o.udpServices,
			},
		}, log), nil
	case bus.StageTranslator:
		cfg, err := o.translatorConfig()
		if err != nil {
			return nil, err
		}
		return translator.New(conn, cfg, log), nil
	case bus.StageAnnotations:
		cfg, err := o.annotationsConfig(log)
		if err != nil {
			return nil, err
		}
		return annotations.New(conn, cfg, log), nil
	case bus.StageRenderer:
		cfg, err := o.rendererConfig()
		if err != nil {
			return nil, err
		}
		return renderer.New(conn, cfg, log), nil
	case bus.StageApplier:
		prefix, err := o.prefix()
		if err != nil {
			return nil, err
		}
		local, err := o.local(log)
		if err != nil {
			return nil, err
		}
		worker, err := o.workerUser()
		if err != nil {
			return nil, err
		}
		if o.sslPassthrough {
			if err := passthroughModule(renderer.DefaultConfig().ModulesDir); err != nil {
				return nil, err
			}
		}
		return applier.New(conn, applier.Config{
			NginxBinary: o.nginxBinary, Prefix: prefix, Local: local, ShutdownGrace: o.shutdownGrace, WorkerUser: worker,
			MinReloadInterval: o.minReloadInterval,
			FullBackendPosts:  o.fullBackendPosts,
		}, log), nil
	}
	if name == bus.StageWebhook {
		return o.webhookStage(conn, log)
	}
	return nil, fmt.Errorf("unknown stage %q (stages: %v, %s)", name, bus.Stages, bus.StageWebhook)
}

// builtinsBinary is the binary that serves the built-in plugins: the small
// switchyard-plugins next to this one (a plugin process of it starts in
// about two thirds of the time and holds about a third less private
// memory than one of this binary, which initializes client-go, NATS and
// zap for nothing), or this binary itself.
func builtinsBinary(log *zap.Logger) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the switchyard binary for its built-in plugins: %w", err)
	}
	slim := filepath.Join(filepath.Dir(self), builtin.BinaryName)
	if info, err := os.Stat(slim); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
		return slim, nil
	}
	log.Info("built-in plugins run from the switchyard binary: "+builtin.BinaryName+" is not next to it "+
		"(build it with make build for less memory and a faster start)", zap.String("looked for", slim))
	return self, nil
}

// webhookStage judges Ingresses with the translator's and the plugins'
// configuration, exactly as the pipeline's stages are configured.
func (o *options) webhookStage(conn *bus.Conn, log *zap.Logger) (runner, error) {
	tcfg, err := o.translatorConfig()
	if err != nil {
		return nil, err
	}
	acfg, err := o.annotationsConfig(log)
	if err != nil {
		return nil, err
	}
	return admission.New(conn, admission.Config{
		Addr: o.webhookAddr, CertFile: o.webhookCert, KeyFile: o.webhookKey, Translator: tcfg, Annotations: acfg,
	}, log), nil
}

func (o *options) annotationsConfig(log *zap.Logger) (annotations.Config, error) {
	bin, err := builtinsBinary(log)
	if err != nil {
		return annotations.Config{}, err
	}
	return annotations.Config{Prefix: o.annotationsPrefix, Builtins: builtin.Descriptions(), Self: bin, PluginDir: o.pluginDir,
		SSLPassthrough: o.sslPassthrough}, nil
}

// namespacedNamePattern is a flag's NAMESPACE/NAME: a namespace (a DNS
// label) and an object name (a DNS subdomain).
var namespacedNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$`)

// startTracing turns on the pipeline's traces when --otlp-endpoint is
// given; the returned stop sends what is queued (at most 5 s).
func (o *options) startTracing(ctx context.Context, log *zap.Logger) (stop func(), err error) {
	if o.otlpEndpoint == "" {
		return func() {}, nil
	}
	exp, err := otelexport.Start(ctx, otelexport.Config{Endpoint: o.otlpEndpoint, ServiceName: o.otelServiceName})
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %w", err)
	}
	log.Info("pipeline traces on", zap.String("otlpEndpoint", o.otlpEndpoint), zap.String("serviceName", o.otelServiceName))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := exp.Shutdown(ctx); err != nil {
			log.Warn("sending the last pipeline spans", zap.Error(err))
		}
	}, nil
}

// passthroughModule checks that the NGINX here can run TLS passthrough:
// its endpoints need njs for the stream module. Without it, every
// configuration would fail nginx -t, so the applier does not start.
func passthroughModule(modulesDir string) error {
	path := filepath.Join(modulesDir, renderer.StreamJSModule)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("--enable-ssl-passthrough needs NGINX's stream njs module: %s is missing (Debian package libnginx-mod-stream-js)", path)
	}
	return nil
}

// modSecurity finds out whether ModSecurity can run here: Debian's module
// and Core Rule Set installed (else the Ingresses asking for it fail
// closed), and --modsecurity-config readable.
func (o *options) modSecurity(modulesDir string) (renderer.ModSecurityConfig, error) {
	cfg := renderer.ModSecurityConfig{RulesFile: o.modSecurityConfig}
	if cfg.RulesFile != "" {
		if !filepath.IsAbs(cfg.RulesFile) {
			return cfg, fmt.Errorf("--modsecurity-config %q is not an absolute path", cfg.RulesFile)
		}
		if _, err := os.Stat(cfg.RulesFile); err != nil {
			return cfg, fmt.Errorf("--modsecurity-config: %w", err)
		}
	}
	need := map[string]string{filepath.Join(modulesDir, renderer.ModSecurityModule): "libnginx-mod-http-modsecurity"}
	for _, f := range renderer.CoreRuleSetFiles {
		need[f] = "modsecurity-crs"
	}
	for _, path := range slices.Sorted(maps.Keys(need)) {
		if _, err := os.Stat(path); err != nil {
			cfg.Unavailable = fmt.Sprintf("%s is missing (Debian package %s)", path, need[path])
			break
		}
	}
	return cfg, nil
}
