package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// ingress-nginx's command-line flags that Switchyard has no flag of its
// own for. A values file's controller.extraArgs, or a Deployment's args,
// carries them over; Go's flag package would stop the controller at the
// first name it does not know. Each is accepted, and then either does
// what it asks (update-status, shutdown-grace-period), is ignored with a
// warning saying why (it changes nothing a client sees), or stops the
// start with an error naming it, when serving without it would serve
// something other than what it asks for. A value that asks for what
// Switchyard does anyway is accepted without a word.

// flagFate is what Switchyard does with one of ingress-nginx's flags.
type flagFate string

const (
	fateImplemented flagFate = "implemented"
	fateIgnored     flagFate = "ignored"
	fateRefused     flagFate = "refused"
)

// foreignFlag is one flag of ingress-nginx's.
type foreignFlag struct {
	name string
	// isBool: the flag takes no value ("--profiling" means true).
	isBool bool
	// def is ingress-nginx's default, for the docs.
	def  string
	fate flagFate
	// same are the values for which Switchyard behaves as asked: given
	// one, the flag is accepted without a word whatever its fate.
	same []string
	// why says what Switchyard does instead, for the warning, the error
	// and the docs.
	why string
}

// klogIgnored is why the logging flags of ingress-nginx's klog are ignored.
const klogIgnored = "Switchyard logs with zap: use --log-level and --log-format"

// ingressNginxFlags are ingress-nginx's flags (pkg/flags/flags.go and
// klog's) that Switchyard does not define under the same name. The names
// Switchyard does define (configmap, publish-service, watch-namespace, ...)
// mean what they mean in ingress-nginx.
var ingressNginxFlags = []foreignFlag{
	{name: "apiserver-host", def: `""`, fate: fateImplemented,
		why: "the API server's URL, over the server of --kubeconfig (client-go's BuildConfigFromFlags, as in ingress-nginx)"},
	{name: "certificate-authority", def: `""`, fate: fateImplemented,
		why: "the CA file the API server's certificate is checked with, with --apiserver-host"},
	{name: "bucket-factor", def: "0", fate: fateIgnored, same: []string{"0"},
		why: "native histograms are not exported; the classic buckets are (--time-buckets, --length-buckets, --size-buckets)"},
	{name: "max-buckets", def: "100", fate: fateIgnored, same: []string{"100"},
		why: "native histograms are not exported; the classic buckets are (--time-buckets, --length-buckets, --size-buckets)"},
	{name: "deep-inspect", isBool: true, def: "true", fate: fateIgnored, same: []string{"true"},
		why: "Switchyard always checks every annotation value against a whole-string pattern"},
	{name: "default-server-port", def: "8181", fate: fateIgnored,
		why: "the catch-all server listens on --http-addr and --https-addr like every other server"},
	{name: "disable-catch-all", isBool: true, def: "false", fate: fateImplemented,
		why: "true: an Ingress with a defaultBackend and no rules is not served (reported as CatchAllDisabled)"},
	{name: "disable-full-test", isBool: true, def: "false", fate: fateIgnored,
		why: "the admission webhook always checks an Ingress with the configuration it would join"},
	{name: "disable-leader-election", isBool: true, def: "false", fate: fateIgnored, same: []string{"false"},
		why: "the replicas always elect the one that writes the Ingress status (--election-id)"},
	{name: "disable-svc-external-name", isBool: true, def: "false", fate: fateImplemented,
		why: "true: a path to a Service of type ExternalName answers 503 (reported as ExternalNameDisabled), and so does a TCP or UDP service's, as always"},
	{name: "disable-sync-events", isBool: true, def: "false", fate: fateIgnored,
		why: "Switchyard creates no Sync events; it reports problems as Events of the object at fault"},
	{name: "dynamic-configuration-retries", def: "15", fate: fateIgnored,
		why: "the applier retries pushing endpoints and certificates to NGINX with backoff, without a limit"},
	{name: "election-ttl", def: "30s", fate: fateIgnored,
		why: "the status writer's lease has a fixed duration"},
	{name: "enable-annotation-validation", isBool: true, def: "true", fate: fateIgnored, same: []string{"true"},
		why: "Switchyard always checks every annotation value against a whole-string pattern"},
	{name: "enable-ssl-chain-completion", isBool: true, def: "false", fate: fateIgnored, same: []string{"false"},
		why: "certificates are served with the chain their Secret holds"},
	{name: "enable-topology-aware-routing", isBool: true, def: "false", fate: fateIgnored, same: []string{"false"},
		why: "requests go to the endpoints of every zone; EndpointSlice hints are not read"},
	{name: "health-check-path", def: "/healthz", fate: fateIgnored, same: []string{"/healthz"},
		why: "the health endpoints are /healthz and /readyz on --metrics-addr"},
	{name: "health-check-timeout", def: "10", fate: fateIgnored,
		why: "the health endpoints answer from the controller's state, without a probe of NGINX"},
	{name: "healthz-host", def: `""`, fate: fateIgnored,
		why: "the health endpoints are on --metrics-addr"},
	{name: "healthz-port", def: "10254", fate: fateIgnored,
		why: "the health endpoints are on --metrics-addr"},
	{name: "http-port", def: "80", fate: fateRefused,
		why: "NGINX listens for HTTP where --http-addr says (the chart: 0.0.0.0:8080,[::]:8080)"},
	{name: "https-port", def: "443", fate: fateRefused,
		why: "NGINX listens for HTTPS where --https-addr says (the chart: 0.0.0.0:8443,[::]:8443)"},
	{name: "ingress-class-by-name", isBool: true, def: "false", fate: fateImplemented,
		why: "true: the IngressClass named --ingress-class is served whatever its spec.controller says, besides the classes of --controller-class"},
	{name: "internal-logger-address", def: "127.0.0.1:11514", fate: fateIgnored,
		why: "NGINX's logs reach the controller's log without a syslog hop"},
	{name: "maxmind-edition-ids", def: "GeoLite2-City,GeoLite2-ASN", fate: fateIgnored,
		why: "GeoIP2 databases are not supported (the ConfigMap's use-geoip2 is reported as not supported)"},
	{name: "maxmind-license-key", def: `""`, fate: fateIgnored,
		why: "GeoIP2 databases are not supported (the ConfigMap's use-geoip2 is reported as not supported)"},
	{name: "maxmind-mirror", def: `""`, fate: fateIgnored,
		why: "GeoIP2 databases are not supported (the ConfigMap's use-geoip2 is reported as not supported)"},
	{name: "maxmind-retries-count", def: "1", fate: fateIgnored,
		why: "GeoIP2 databases are not supported (the ConfigMap's use-geoip2 is reported as not supported)"},
	{name: "maxmind-retries-timeout", def: "0s", fate: fateIgnored,
		why: "GeoIP2 databases are not supported (the ConfigMap's use-geoip2 is reported as not supported)"},
	{name: "metrics-per-undefined-host", isBool: true, def: "false", fate: fateIgnored, same: []string{"false"},
		why: "requests for a host no Ingress defines are labelled host \"_\", so a client cannot make series up"},
	{name: "monitor-max-batch-size", def: "10000", fate: fateIgnored,
		why: "NGINX counts requests in shared memory, read on scrape; nothing is sent in batches"},
	{name: "post-shutdown-grace-period", def: "10", fate: fateIgnored,
		why: "the controller exits as soon as NGINX has stopped"},
	{name: "profiler-address", def: "127.0.0.1", fate: fateIgnored,
		why: "Go's profiler is served on --profiling-addr"},
	{name: "profiler-port", def: "10245", fate: fateIgnored,
		why: "Go's profiler is served on --profiling-addr"},
	{name: "profiling", isBool: true, def: "true", fate: fateIgnored, same: []string{"false"},
		why: "Go's profiler is served only with --profiling-addr"},
	{name: "report-node-internal-ip-address", isBool: true, def: "false", fate: fateIgnored, same: []string{"false"},
		why: "the Ingress status holds the addresses of --publish-service or --publish-status-address"},
	{name: "shutdown-grace-period", def: "0", fate: fateImplemented,
		why: "seconds NGINX keeps serving after SIGTERM, while /readyz answers 503, before it drains (--shutdown-grace) and stops; the pod's terminationGracePeriodSeconds (the chart: 60) must cover both"},
	{name: "ssl-passthrough-proxy-port", def: "442", fate: fateIgnored,
		why: "TLS passthrough hands connections over on unix sockets"},
	{name: "status-port", def: "10246", fate: fateIgnored,
		why: "NGINX's configuration endpoint is a unix socket"},
	{name: "status-update-interval", def: "60", fate: fateIgnored,
		why: "the Ingress status is written when the published addresses or the served Ingresses change"},
	{name: "stream-port", def: "10247", fate: fateIgnored,
		why: "NGINX's configuration endpoint is a unix socket"},
	{name: "sync-period", def: "0s", fate: fateIgnored, same: []string{"0", "0s"},
		why: "the watches keep every object current; nothing is listed again periodically"},
	{name: "sync-rate-limit", def: "0.3", fate: fateIgnored,
		why: "reloads are spaced by --min-reload-interval; endpoint and certificate changes never wait"},
	{name: "update-status", isBool: true, def: "true", fate: fateImplemented,
		why: "false: the Ingress status is not written, whatever --publish-service or --publish-status-address say"},
	{name: "update-status-on-shutdown", isBool: true, def: "true", fate: fateIgnored, same: []string{"false"},
		why: "the Ingress status is left as it is when the controller stops, so a rolling update does not clear it"},
	{name: "version", isBool: true, def: "false", fate: fateImplemented,
		why: "prints Switchyard's version and exits, as switchyard version does"},
	// klog's flags, which ingress-nginx's binary takes too.
	{name: "add_dir_header", isBool: true, def: "false", fate: fateIgnored, why: klogIgnored},
	{name: "alsologtostderr", isBool: true, def: "false", fate: fateIgnored, why: klogIgnored},
	{name: "log_backtrace_at", def: ":0", fate: fateIgnored, why: klogIgnored},
	{name: "log_dir", def: `""`, fate: fateIgnored, why: klogIgnored},
	{name: "log_file", def: `""`, fate: fateIgnored, why: klogIgnored},
	{name: "log_file_max_size", def: "1800", fate: fateIgnored, why: klogIgnored},
	{name: "logtostderr", isBool: true, def: "true", fate: fateIgnored, same: []string{"true"}, why: klogIgnored},
	{name: "one_output", isBool: true, def: "false", fate: fateIgnored, why: klogIgnored},
	{name: "skip_headers", isBool: true, def: "false", fate: fateIgnored, why: klogIgnored},
	{name: "skip_log_headers", isBool: true, def: "false", fate: fateIgnored, why: klogIgnored},
	{name: "stderrthreshold", def: "2", fate: fateIgnored, why: klogIgnored},
	{name: "v", def: "0", fate: fateIgnored, why: klogIgnored},
	{name: "vmodule", def: `""`, fate: fateIgnored, why: klogIgnored},
}

// foreignFlags holds the values given for ingressNginxFlags.
type foreignFlags struct {
	values map[string]*foreignValue
}

// foreignValue is a flag.Value that keeps what was given, and whether.
type foreignValue struct {
	isBool bool
	set    bool
	value  string
}

func (v *foreignValue) String() string { return v.value }

func (v *foreignValue) Set(s string) error {
	if v.isBool {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		s = strconv.FormatBool(b)
	}
	v.set, v.value = true, s
	return nil
}

// IsBoolFlag lets a boolean flag be given without a value.
func (v *foreignValue) IsBoolFlag() bool { return v.isBool }

// register adds ingress-nginx's flags to fs.
func (f *foreignFlags) register(fs *flag.FlagSet) {
	f.values = map[string]*foreignValue{}
	for _, ff := range ingressNginxFlags {
		v := &foreignValue{isBool: ff.isBool}
		f.values[ff.name] = v
		fs.Var(v, ff.name, "ingress-nginx's flag, "+string(ff.fate)+": "+ff.why)
	}
}

// given returns the value of name and whether it was given.
func (f *foreignFlags) given(name string) (string, bool) {
	v := f.values[name]
	if v == nil || !v.set {
		return "", false
	}
	return v.value, true
}

// fateAsAsked is the fate of a flag given a value Switchyard honours
// anyway (one of its same values).
const fateAsAsked flagFate = "as asked"

// givenFlag is one of ingress-nginx's flags as given, with its fate.
type givenFlag struct {
	Flag  string   `json:"flag"`
	Value string   `json:"value"`
	Fate  flagFate `json:"fate"`
	Why   string   `json:"why"`
}

// givenFlags lists the flags of ingress-nginx's that were given, in the
// table's order, each with what run does with it.
func (f *foreignFlags) givenFlags() []givenFlag {
	var out []givenFlag
	for _, ff := range ingressNginxFlags {
		value, ok := f.given(ff.name)
		if !ok {
			continue
		}
		fate := ff.fate
		if slices.Contains(ff.same, value) {
			fate = fateAsAsked
		}
		out = append(out, givenFlag{Flag: ff.name, Value: value, Fate: fate, Why: ff.why})
	}
	return out
}

// check returns a warning for each ignored flag given, and an error naming
// every refused one given with a value Switchyard cannot honour.
func (f *foreignFlags) check() (warnings []string, err error) {
	var refused []string
	for _, g := range f.givenFlags() {
		switch g.Fate {
		case fateIgnored:
			warnings = append(warnings, fmt.Sprintf("ingress-nginx's flag --%s=%s is ignored: %s", g.Flag, g.Value, g.Why))
		case fateRefused:
			refused = append(refused, fmt.Sprintf("--%s=%s: %s; remove it", g.Flag, g.Value, g.Why))
		}
	}
	if len(refused) > 0 {
		return warnings, fmt.Errorf("ingress-nginx flags Switchyard does not implement:\n  %s", strings.Join(refused, "\n  "))
	}
	return warnings, nil
}

// updateStatus is ingress-nginx's --update-status: true unless given false.
func (f *foreignFlags) updateStatus() bool {
	v, ok := f.given("update-status")
	return !ok || v == "true"
}

// isTrue says whether the boolean flag name was given true.
func (f *foreignFlags) isTrue(name string) bool {
	v, ok := f.given(name)
	return ok && v == "true"
}

// shutdownDelay is ingress-nginx's --shutdown-grace-period, in seconds.
func (f *foreignFlags) shutdownDelay() (time.Duration, error) {
	v, ok := f.given("shutdown-grace-period")
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 3600 {
		return 0, fmt.Errorf("--shutdown-grace-period %q: want whole seconds from 0 to 3600", v)
	}
	return time.Duration(n) * time.Second, nil
}

// printVersionIfAsked prints the version for ingress-nginx's --version,
// which then ends the command, and says whether it did.
func (o *options) printVersionIfAsked() bool {
	if !o.ingressNginx.isTrue("version") {
		return false
	}
	fmt.Println("switchyard", version)
	return true
}

// checkIngressNginxFlags logs a warning for each ignored flag of
// ingress-nginx's given, and fails for a refused one (flags_ingressnginx.go).
func (o *options) checkIngressNginxFlags(log *zap.Logger) error {
	warnings, err := o.ingressNginx.check()
	for _, w := range warnings {
		log.Warn(w)
	}
	if err != nil {
		return err
	}
	_, err = o.ingressNginx.shutdownDelay()
	return err
}

// shutdownContext ends at SIGINT or SIGTERM, after ingress-nginx's
// --shutdown-grace-period: meanwhile NGINX serves on and /readyz answers
// 503, so that load balancers take the pod out before it drains
// (--shutdown-grace). A second signal during the period ends it at once;
// later ones, while NGINX drains, are caught and change nothing (as with
// signal.NotifyContext) until stop.
func (o *options) shutdownContext(log *zap.Logger) (ctx context.Context, stop context.CancelFunc, err error) {
	delay, err := o.ingressNginx.shutdownDelay()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	stop = func() {
		signal.Stop(signals)
		cancel()
	}
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			return
		}
		if delay > 0 {
			stageReadiness.draining.Store(true)
			log.Info("shutdown signal: NGINX serves on while /readyz answers 503", zap.Duration("shutdown-grace-period", delay))
			select {
			case <-time.After(delay):
			case <-signals:
				log.Info("second shutdown signal: stopping now")
			case <-ctx.Done():
			}
		}
		cancel()
	}()
	return ctx, stop, nil
}

// writeFlagDocs writes docs/flags.md: what Switchyard does with each of
// ingress-nginx's flags it has none of its own for.
func writeFlagDocs(w io.Writer) {
	fmt.Fprintln(w, "# ingress-nginx's command-line flags")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated from flags_ingressnginx.go; `go test -run TestFlagDocsAreCurrent -update .` rewrites it.")
	fmt.Fprintln(w, "`switchyard run` and `switchyard stage` take the flags of ingress-nginx's controller, so the `args` of its Deployment or the `controller.extraArgs` of a values file carry over.")
	fmt.Fprintln(w, "The flags Switchyard defines under the same name (`--configmap`, `--publish-service`, `--watch-namespace`, `--default-ssl-certificate`, `--enable-ssl-passthrough`, `--tcp-services-configmap`, `--time-buckets`, ... see `switchyard run -h`) do what they do in ingress-nginx. Of the others:")
	fmt.Fprintln(w, "- **implemented**: does what it asks;")
	fmt.Fprintln(w, "- **ignored**: changes nothing a client sees; given, it is logged as a warning saying what Switchyard does instead;")
	fmt.Fprintln(w, "- **refused**: serving without it would serve something other than what it asks, so the controller does not start, naming it.")
	fmt.Fprintln(w, "A flag given a value in the *same* column asks for what Switchyard does anyway and is accepted without a word.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Flag | ingress-nginx default | Switchyard | Same | What Switchyard does |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, ff := range ingressNginxFlags {
		same := "—"
		if len(ff.same) > 0 {
			quoted := make([]string, len(ff.same))
			for i, v := range ff.same {
				quoted[i] = "`" + v + "`"
				if v == "" {
					quoted[i] = `""`
				}
			}
			same = strings.Join(quoted, ", ")
		}
		fmt.Fprintf(w, "| `--%s` | %s | %s | %s | %s |\n", ff.name, mdCode(ff.def), ff.fate, same, mdCell(ff.why))
	}
}
