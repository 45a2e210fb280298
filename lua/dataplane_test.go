package lua_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"switchyard.dev/switchyard/internal/freeport"
	"switchyard.dev/switchyard/lua"
)

const (
	nginxBinary = "/usr/sbin/nginx"
	modulesDir  = "/usr/lib/nginx/modules"
)

// The http block mirrors what the renderer emits for the Lua modules. The
// test-only parts: $proxy_upstream_name comes from a request header so one
// location can reach every backend, reuseport spreads connections over both
// workers, and the shared dicts are small so "dict full" is cheap to reach.
const nginxConfTemplate = `
{{if .Root}}user root;{{end}}
load_module {{.Modules}}/ndk_http_module.so;
load_module {{.Modules}}/ngx_http_lua_module.so;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log notice;
worker_processes 2;

events {
    worker_connections 1024;
}

http {
    access_log off;
    client_body_temp_path {{.Dir}}/tmp/body;
    proxy_temp_path {{.Dir}}/tmp/proxy;
    fastcgi_temp_path {{.Dir}}/tmp/fastcgi;
    uwsgi_temp_path {{.Dir}}/tmp/uwsgi;
    scgi_temp_path {{.Dir}}/tmp/scgi;

    lua_package_path "$prefix/lua/?.lua;;";
    lua_shared_dict switchyard_config {{.ConfigDict}};
    lua_shared_dict switchyard_certs 1m;
    lua_shared_dict switchyard_versions 256k;
    lua_shared_dict switchyard_metrics 256k;
    lua_shared_dict switchyard_traces 256k;

    init_by_lua_block {
        require("switchyard.metrics").init()
        -- Off unless a location says otherwise (tracing_test.go).
        require("switchyard.tracing").init({
            enabled = false, trust = true, operation = "", sampler = "AlwaysOn", ratio = 1,
            parent_based = false, max_queue = 50, endpoint = "collector:4317", service = "edge",
            delay_ms = 1000, batch = 20,
        })
    }
    init_worker_by_lua_block {
        require("switchyard.balancer").init_worker()
        require("switchyard.metrics").init_worker()
    }
    header_filter_by_lua_block {
        require("switchyard.balancer").header_filter()
    }
    log_by_lua_block {
        require("switchyard.balancer").log()
        require("switchyard.metrics").log()
        require("switchyard.tracing").log()
    }
    geo $switchyard_dollar {
        default "$";
    }
    map "" $switchyard_otel {
        default "";
    }

    upstream upstream_balancer {
        server 0.0.0.1; # placeholder, balancer_by_lua sets the peer
        balancer_by_lua_block {
            require("switchyard.balancer").balance()
        }
        keepalive 320;
    }

    server {
        listen 127.0.0.1:{{.HTTPPort}} reuseport;
        listen 127.0.0.1:{{.HTTPSPort}} ssl reuseport;

        ssl_certificate {{.Dir}}/default.crt;
        ssl_certificate_key {{.Dir}}/default.key;
        ssl_certificate_by_lua_block {
            require("switchyard.certificate").call()
        }

        # access_test.go sets the client address it tests with.
        real_ip_header X-Test-Addr;
        set_real_ip_from 127.0.0.1;

        add_header X-Worker-Pid $pid always;
        add_header X-Alternative $proxy_alternative_upstream_name always;
        set $proxy_alternative_upstream_name "";

        location / {
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite()
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
            proxy_connect_timeout 2s;
            proxy_pass http://upstream_balancer;
        }

        # The renderer passes the location's backend name to the rewrite
        # hook; it wins over $proxy_upstream_name.
        location /named/ {
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite("default-named-80")
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }

        # Which hosts ssl-redirect and HSTS treat as having TLS: "host=a/b"
        # per host, a from configured_for, b from configured_for_lower of
        # the lower-cased host.
        location = /tls-hosts {
            content_by_lua_block {
                local certificate = require("switchyard.certificate")
                local out = {}
                for host in ngx.var.arg_hosts:gmatch("[^,]+") do
                    out[#out + 1] = host .. "=" .. tostring(certificate.configured_for(host)) .. "/"
                        .. tostring(certificate.configured_for_lower(host:lower()))
                end
                ngx.print(table.concat(out, ","))
            }
        }

        # What a rendered location sets for the metrics; the test sets
        # the path from a header to make series up.
        location /metrics-test/ {
            set $namespace "shop";
            set $ingress_name "web";
            set $service_name "web";
            set $service_port "80";
            set $location_path $http_x_test_path;
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite()
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }

        # A rendered location passes its labels to the rewrite hook as
        # literals; the metrics take those. Its variables hold other values
        # here, so the test sees which were used.
        location /metrics-literal/ {
            set $namespace "vars";
            set $ingress_name "vars";
            set $service_name "vars";
            set $location_path "/vars";
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite(ngx.var.http_x_test_backend, nil, nil, nil, nil, nil,
                    "/lit\001shop\0011web\001web", "lit.example.com")
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }

        # The versions requests read (switchyard_versions) next to the ones
        # publishes keep with the values.
        location = /versions-test {
            content_by_lua_block {
                local copies = ngx.shared.switchyard_versions
                for _, k in ipairs({ "backends_version", "certificates_version" }) do
                    local dict = k == "backends_version" and ngx.shared.switchyard_config or ngx.shared.switchyard_certs
                    ngx.say(k, " ", tostring(dict:get(k)), " ", tostring(copies:get(k)))
                end
            }
        }

        # A traced location: $switchyard_otel from a header, as the
        # renderer sets it from the annotations.
        location /trace-test/ {
            set $namespace "shop";
            set $ingress_name "web";
            set $service_name "web";
            set $service_port "80";
            set $location_path "/trace-test/";
            set $switchyard_otel $http_x_test_otel;
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.ingress").rewrite()
                require("switchyard.balancer").rewrite()
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }

        # The tracing module's pure parts, called with query arguments.
        location = /trace-unit {
            content_by_lua_block {
                local tracing = require("switchyard.tracing")
                local args = ngx.req.get_uri_args()
                if args.traceparent then
                    local t, s, f = tracing.parse_traceparent(args.traceparent)
                    ngx.print(tostring(t), " ", tostring(s), " ", tostring(f))
                    return
                end
                local parent
                if args.parent then
                    parent = args.parent == "1"
                end
                ngx.print(tostring(tracing.sampled({ sampler = args.sampler, ratio = tonumber(args.ratio),
                    parent_based = args.parent_based == "1" }, args.trace, parent)))
            }
        }

        # The allow and deny lines of access_test.go, as directives here
        # and decided by router.lua at /access-lua. The client address
        # comes from X-Test-Addr (the realip module, as set up for the
        # whole server below).
{{- range .AccessSets }}
        location = /access-nginx/{{ .Name }} {
{{- range .Lines }}
            {{ . }};
{{- end }}
            content_by_lua_block {
                ngx.print("in ", ngx.var.remote_addr)
            }
        }
{{- end }}
        location = /access-lua {
            rewrite_by_lua_block {
                local router = require("switchyard.router")
                local acc, err = router.compile_access(require("cjson").decode(ngx.var.http_x_test_lines))
                if not acc then
                    ngx.status = 400
                    ngx.print(err)
                    return ngx.exit(400)
                end
                if router.access_denied(acc, ngx.var.binary_remote_addr) then
                    return ngx.exit(403)
                end
            }
            content_by_lua_block {
                ngx.print("in ", ngx.var.remote_addr)
            }
        }

        # The CIDR matcher's parts, called with query arguments.
        location = /cidr-unit {
            content_by_lua_block {
                local cidr = require("switchyard.util.cidr")
                local args = ngx.req.get_uri_args()
                local c, err = cidr.parse(args.cidr)
                if not c then
                    return ngx.print("bad cidr: ", err)
                end
                local addr = cidr.parse_address(args.addr)
                if not addr then
                    return ngx.print("bad addr")
                end
                ngx.print(tostring(cidr.contains(c, addr)))
            }
        }

        # The same for many: a JSON array of [cidr, addr] in, a JSON array
        # of answers out.
        location = /cidr-batch {
            client_max_body_size 4m;
            client_body_buffer_size 4m;
            content_by_lua_block {
                local cidr = require("switchyard.util.cidr")
                local cjson = require("cjson")
                ngx.req.read_body()
                local out = {}
                for i, pair in ipairs(cjson.decode(ngx.req.get_body_data())) do
                    local c, err = cidr.parse(pair[1])
                    local addr = cidr.parse_address(pair[2])
                    if not c then
                        out[i] = "bad cidr"
                    elseif not addr then
                        out[i] = "bad addr"
                    else
                        out[i] = tostring(cidr.contains(c, addr))
                    end
                end
                ngx.print(cjson.encode(out))
            }
        }

        # balancer_by_lua without the rewrite hook
        location /no-rewrite/ {
            set $proxy_upstream_name $http_x_test_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }
    }

    server {
        listen unix:{{.Dir}}/config.sock;
        client_max_body_size 64m;
        client_body_buffer_size 64k; # small, so big bodies go through a temp file
        log_by_lua_block {
            return
        }
        location / {
            content_by_lua_block {
                require("switchyard.configuration").call()
            }
        }
    }
}
`

type dataPlane struct {
	t         *testing.T
	dir       string
	httpAddr  string
	httpsAddr string
	cmd       *exec.Cmd
	config    *http.Client // over the unix socket
	proxy     *http.Client // no keep-alive: every request is a new connection
	defCert   *x509.Certificate
}

func TestDataPlane(t *testing.T) {
	for _, path := range []string{nginxBinary, modulesDir + "/ngx_http_lua_module.so", modulesDir + "/ndk_http_module.so"} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("needs %s: %v", path, err)
		}
	}
	dp := startDataPlane(t)

	t.Run("healthz and unknown paths", dp.testHealthz)
	// Must run before anything is posted.
	t.Run("requests wait for the first configuration", dp.testFirstConfigurationWait)
	t.Run("round robin spreads evenly", dp.testRoundRobin)
	t.Run("rotation survives endpoint changes", dp.testRotationKept)
	t.Run("unavailable backends answer 503", dp.testUnavailable)
	t.Run("endpoint change without reload", dp.testEndpointChange)
	t.Run("idle workers sync from the timer", dp.testTimerSync)
	t.Run("dead endpoint is retried", dp.testDeadEndpoint)
	t.Run("invalid backends are rejected", dp.testInvalidBackends)
	t.Run("large body through temp file", dp.testLargeBody)
	t.Run("dict full answers 507", dp.testBackendsDictFull)
	t.Run("delta adds, changes and removes backends", dp.testDeltaApply)
	t.Run("stale delta is refused", dp.testDeltaStale)
	t.Run("malformed delta is refused whole", dp.testDeltaInvalid)
	t.Run("delta too big for the dict answers 507", dp.testDeltaDictFull)
	t.Run("workers load while deltas keep coming", dp.testLoadWhileDeltasKeepComing)
	t.Run("versions are copied where requests read them", dp.testVersionCopies)
	t.Run("balancer without rewrite hook", dp.testNoRewrite)
	t.Run("backend name passed to the rewrite hook", dp.testNamedRewrite)
	t.Run("config endpoint not reachable via proxy", dp.testConfigNotProxied)
	t.Run("ewma prefers the fast endpoint", dp.testEWMA)
	t.Run("chash keeps keys on their endpoint", dp.testCHash)
	t.Run("chashsubset spreads a key over its subset", dp.testCHashSubset)
	t.Run("sticky cookie attributes and stickiness", dp.testStickyCookie)
	t.Run("sticky persistent vs balanced on scale", dp.testStickyModes)
	t.Run("sticky change on failure", dp.testStickyChangeOnFailure)
	t.Run("certificates by SNI", dp.testCertificates)
	t.Run("invalid certificates are rejected", dp.testInvalidCertificates)
	t.Run("OCSP responses are stapled until they expire", dp.testOCSPStaples)
	t.Run("TLS hosts for ssl-redirect and HSTS", dp.testTLSHosts)
	t.Run("canary by header, cookie and weight", dp.testCanary)
	t.Run("invalid canary fields are rejected", dp.testInvalidCanary)
	t.Run("routes are stored, and malformed ones refused whole", dp.testRoutesEndpoint)
	t.Run("CIDRs parse and match by prefix bits", dp.testCIDRMatch)
	t.Run("CIDRs parse and match as Go's netip does", dp.testCIDRAgreesWithNetip)
	t.Run("router.lua's source ranges decide as NGINX's allow and deny", dp.testAccessAgreesWithNginx)
	t.Run("per-request metrics in the shared dict", dp.testMetrics)
	t.Run("per-request metrics with the location's literal labels", dp.testMetricsLiteralLabels)
	t.Run("request duration is the request's time", dp.testMetricsRequestTime)
	t.Run("per-request metrics kept over a reload", dp.testMetricsKeptOverReload)
	t.Run("a full metrics dict drops, counted", dp.testMetricsDictFull)
	t.Run("traceparent parsing", dp.testTraceparentParsing)
	t.Run("trace samplers", dp.testTraceSamplers)
	t.Run("traced requests continue or start traces", dp.testTracing)
	t.Run("a full trace queue drops, counted", dp.testTraceQueueFull)

	dp.checkErrorLog()
}

// ---------------------------------------------------------------------------
// nginx lifecycle

func startDataPlane(t *testing.T) *dataPlane {
	t.Helper()
	return startDataPlaneWith(t, "4m")
}

// startDataPlaneWith starts NGINX with a backends dict of configDict.
func startDataPlaneWith(t *testing.T, configDict string) *dataPlane {
	t.Helper()
	dir := t.TempDir()
	dp := &dataPlane{t: t, dir: dir}

	must(t, os.MkdirAll(filepath.Join(dir, "tmp"), 0o755))
	must(t, lua.Install(dir))

	defCert, defPEM := newCert(t, "switchyard-default", nil)
	dp.defCert = defCert
	certPEM, keyPEM := splitPEM(t, defPEM)
	must(t, os.WriteFile(filepath.Join(dir, "default.crt"), certPEM, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "default.key"), keyPEM, 0o600))

	httpPort, httpsPort := freePort(t), freePort(t)
	dp.httpAddr = "127.0.0.1:" + strconv.Itoa(httpPort)
	dp.httpsAddr = "127.0.0.1:" + strconv.Itoa(httpsPort)

	var conf bytes.Buffer
	must(t, template.Must(template.New("nginx.conf").Parse(nginxConfTemplate)).Execute(&conf, map[string]any{
		"Root":       os.Geteuid() == 0, // workers must read the 0700 temp dir
		"Modules":    modulesDir,
		"Dir":        dir,
		"HTTPPort":   httpPort,
		"HTTPSPort":  httpsPort,
		"ConfigDict": configDict,
		"AccessSets": accessSets,
	}))
	confPath := filepath.Join(dir, "nginx.conf")
	must(t, os.WriteFile(confPath, conf.Bytes(), 0o644))

	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SWITCHYARD_TEST_LOG") != "" {
			dp.dumpErrorLog()
		}
	})

	if out, err := exec.Command(nginxBinary, "-t", "-p", dir+"/", "-c", confPath).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t failed: %v\n%s", err, out)
	}

	cmd := exec.Command(nginxBinary, "-p", dir+"/", "-c", confPath, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Own process group, so the cleanup can reach workers even if the master
	// is gone; Pdeathsig stops the master if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	dp.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { stopNginx(t, cmd, exited) })

	sock := filepath.Join(dir, "config.sock")
	dp.config = &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		},
	}
	dp.proxy = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("nginx exited during startup")
		default:
		}
		status, body := dp.configRequest("GET", "/healthz", "")
		if status == 200 && body == "ok" && len(dp.workers()) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not ready: healthz %d %q, workers %v", status, body, dp.workers())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return dp
}

func stopNginx(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}) {
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGQUIT) // graceful shutdown of master and workers
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Logf("nginx did not quit in 5s, killing process group %d", pid)
	}
	// Master and workers share the process group started above; make sure
	// nothing of it survives.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// workers returns the PIDs of the master's children, from /proc.
func (dp *dataPlane) workers() []int {
	master := dp.cmd.Process.Pid
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces, so split after ')'
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) && fields[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

func (dp *dataPlane) errorLog() string {
	data, _ := os.ReadFile(filepath.Join(dp.dir, "error.log"))
	return string(data)
}

func (dp *dataPlane) dumpErrorLog() {
	dp.t.Logf("---- %s/error.log ----\n%s", dp.dir, dp.errorLog())
}

// checkErrorLog fails on nginx or Lua failures that the tests did not cause
// on purpose, and on secret material in the log.
func (dp *dataPlane) checkErrorLog() {
	t := dp.t
	log := dp.errorLog()
	for _, bad := range []string{"[emerg]", "[alert]", "[crit]", "runtime error", "failed to run", "lua entry thread aborted", "stack traceback"} {
		if strings.Contains(log, bad) {
			t.Errorf("error.log contains %q", bad)
		}
	}
	for _, secret := range []string{"BEGIN", "PRIVATE KEY", "MII"} {
		if strings.Contains(log, secret) {
			t.Errorf("error.log contains PEM material (%q)", secret)
		}
	}
	// JSON is decoded once per version and worker, never per request.
	loads := map[string]int{}
	for _, m := range loadedRE.FindAllStringSubmatch(log, -1) {
		loads[m[1]+" version "+m[2]]++
	}
	if len(loads) == 0 {
		t.Errorf("no backend loads logged")
	}
	for k, n := range loads {
		if n > 1 {
			t.Errorf("worker %s decoded %d times", k, n)
		}
	}
}

// ---------------------------------------------------------------------------
// clients

func (dp *dataPlane) configRequest(method, path, body string) (int, string) {
	dp.t.Helper()
	req, err := http.NewRequest(method, "http://switchyard"+path, strings.NewReader(body))
	must(dp.t, err)
	resp, err := dp.config.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

type proxyResponse struct {
	status  int
	body    string
	backend string // X-Backend of the Go backend that answered
	worker  string // X-Worker-Pid added by nginx
	// alternative is $proxy_alternative_upstream_name (X-Alternative).
	alternative string
}

func (dp *dataPlane) get(path, backend string) proxyResponse {
	dp.t.Helper()
	req, err := http.NewRequest("GET", "http://"+dp.httpAddr+path, nil)
	must(dp.t, err)
	if backend != "" {
		req.Header.Set("X-Test-Backend", backend)
	}
	resp, err := dp.proxy.Do(req)
	if err != nil {
		dp.t.Fatalf("GET %s (backend %q): %v", path, backend, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return proxyResponse{resp.StatusCode, string(data), resp.Header.Get("X-Backend"), resp.Header.Get("X-Worker-Pid"),
		resp.Header.Get("X-Alternative")}
}

// ---------------------------------------------------------------------------
// backends

type endpoint struct {
	Address string `json:"address"`
	Port    string `json:"port"`
}

type backend struct {
	Name        string            `json:"name"`
	Service     map[string]string `json:"service,omitempty"`
	Endpoints   []endpoint        `json:"endpoints"`
	LoadBalance string            `json:"load-balance,omitempty"`
	// Canary fields, ingress-nginx's shape.
	AlternativeBackends  []string       `json:"alternativeBackends,omitempty"`
	TrafficShapingPolicy map[string]any `json:"trafficShapingPolicy,omitempty"`
	// Balancing settings, in ingress-nginx's shape (see balancing_test.go).
	UpstreamHashBy  map[string]any `json:"upstreamHashByConfig,omitempty"`
	SessionAffinity map[string]any `json:"sessionAffinityConfig,omitempty"`
}

// startBackends starts n HTTP servers that answer with their own id.
func startBackends(t *testing.T, prefix string, n int) ([]endpoint, []string) {
	t.Helper()
	var eps []endpoint
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Backend", id)
			fmt.Fprintf(w, "%s %s", id, r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
		must(t, err)
		eps = append(eps, endpoint{host, port})
		ids = append(ids, id)
	}
	return eps, ids
}

func (dp *dataPlane) postBackends(backends ...backend) {
	dp.t.Helper()
	body, err := json.Marshal(backends)
	must(dp.t, err)
	if status, text := dp.configRequest("POST", "/configuration/backends", string(body)); status != 201 {
		dp.t.Fatalf("POST backends: %d %s", status, text)
	}
}

func svc(name string) map[string]string {
	return map[string]string{"namespace": "default", "name": name, "port": "80"}
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Loopback()
	must(t, err)
	return port
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
