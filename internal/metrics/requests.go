package metrics

// Per-request series. NGINX counts every request in its log phase into a
// shared dict (lua/switchyard/metrics.lua); on each scrape the collector
// reads the dict's aggregates through the configuration endpoint and
// exposes them as constant metrics, under ingress-nginx's names, labels
// and buckets. Nothing is sent per request, and nothing is kept here
// between scrapes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// requestLabels are ingress-nginx's request labels, in the order the Lua
// keys hold them; "host" is last, and only exported with metrics per host.
var requestLabels = []string{"status", "method", "path", "namespace", "ingress", "service", "canary", "host"}

// histogram is one of ingress-nginx's request histograms and the code its
// Lua keys start with.
type histogram struct {
	code, name, help string
}

// histograms as ingress-nginx's socket collector declares them. The
// requests counter is request_duration's count: every request has a
// request time.
var histograms = []histogram{
	{"rd", "request_duration_seconds", "The request processing time in milliseconds"},
	{"cd", "connect_duration_seconds", "The time spent on establishing a connection with the upstream server"},
	{"hd", "header_duration_seconds", "The time spent on receiving first header from the upstream server"},
	{"sd", "response_duration_seconds", "The time spent on receiving the response from the upstream server"},
	{"rq", "request_size", "The request length (including request line, header, and request body)"},
	{"rs", "response_size", "The response length (including request line, header, and request body)"},
	{"bs", "bytes_sent", "DEPRECATED The number of bytes sent to a client"},
}

const requestCountCode = "rd"

// RequestOptions are ingress-nginx's flags for its request series.
type RequestOptions struct {
	// PerHost adds the host label (--metrics-per-host).
	PerHost bool
	// StatusClasses reports 2xx, 3xx, 4xx and 5xx instead of status codes
	// (--report-status-classes).
	StatusClasses bool
	// Exclude are series not exported (--exclude-socket-metrics), with or
	// without the nginx_ingress_controller_ prefix.
	Exclude []string
	// Ingresses, when set, leaves out the series of Ingresses it does not
	// have (deleted ones).
	Ingresses *IngressSet
}

// RequestCollector exposes the per-request series NGINX aggregated.
type RequestCollector struct {
	fetch         func(context.Context) ([]byte, error)
	perHost       bool
	statusClasses bool
	excluded      map[string]bool
	ingresses     *IngressSet
	// onError is told why a scrape found no per-request series.
	onError func(error)

	// names are the families' names and help, for both ways of writing
	// them (Collect, writeText); constLabels the controller's labels.
	names       requestFamilyNames
	constLabels [][2]string

	requests   *prometheus.Desc
	histograms map[string]*prometheus.Desc
	latency    *prometheus.Desc
	dropped    *prometheus.Desc
	dictBytes  *prometheus.Desc
	dictFree   *prometheus.Desc
	// luaDictBytes and luaDictFree are the dynamic configuration's dicts.
	luaDictBytes, luaDictFree *prometheus.Desc
	readErrorsDesc            *prometheus.Desc
	readErrors                atomic.Uint64
}

// family is a metric family's name and help.
type family struct{ name, help string }

type requestFamilyNames struct {
	requests, latency, dropped, dictBytes, dictFree, luaDictBytes, luaDictFree, readErrors family
	histograms                                                                             map[string]family
}

func newRequestFamilyNames() requestFamilyNames {
	fq := func(name string) string { return prometheus.BuildFQName("nginx", "ingress_controller", name) }
	n := requestFamilyNames{
		requests: family{fq("requests"), "The total number of client requests"},
		// Deprecated in ingress-nginx, and still on its request handling
		// dashboard: the connect time per Ingress, as a summary. Its
		// quantiles cannot be had from buckets summed over workers; sum
		// and count, which the dashboard reads, can.
		latency: family{fq("ingress_upstream_latency_seconds"), "DEPRECATED Upstream service latency per Ingress"},
		dropped: family{"switchyard_request_metrics_dropped_total",
			"Requests whose metrics were not all counted because NGINX's metrics dict was full"},
		dictBytes: family{"switchyard_request_metrics_dict_bytes", "Size of NGINX's shared dict of per-request metrics"},
		dictFree:  family{"switchyard_request_metrics_dict_free_bytes", "Free pages of NGINX's shared dict of per-request metrics, in bytes"},
		luaDictBytes: family{"switchyard_lua_dict_bytes",
			"Size of an NGINX shared dict of the dynamic configuration (switchyard_config: backends, switchyard_certs: certificates)"},
		luaDictFree: family{"switchyard_lua_dict_free_bytes", "Free pages of an NGINX shared dict of the dynamic configuration, in bytes"},
		readErrors:  family{"switchyard_request_metrics_read_errors_total", "Scrapes that could not read the per-request metrics from NGINX"},
		histograms:  map[string]family{},
	}
	for _, h := range histograms {
		n.histograms[h.code] = family{fq(h.name), h.help}
	}
	return n
}

// NewRequestCollector reads the aggregates from the configuration endpoint
// at socket.
func NewRequestCollector(l Labels, socket string, o RequestOptions, onError func(error)) *RequestCollector {
	return newRequestCollector(l, unixGetter(socket, "/metrics"), o, onError)
}

func newRequestCollector(l Labels, fetch func(context.Context) ([]byte, error), o RequestOptions, onError func(error)) *RequestCollector {
	constLabels := prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}
	excluded := map[string]bool{}
	for _, name := range o.Exclude {
		excluded[strings.TrimPrefix(strings.TrimSpace(name), "nginx_ingress_controller_")] = true
	}
	c := &RequestCollector{
		fetch: fetch, perHost: o.PerHost, statusClasses: o.StatusClasses, excluded: excluded, ingresses: o.Ingresses, onError: onError,
		names:       newRequestFamilyNames(),
		constLabels: [][2]string{{"controller_class", l.Class}, {"controller_namespace", l.Namespace}, {"controller_pod", l.Pod}},
		histograms:  map[string]*prometheus.Desc{},
	}
	names := c.labelNames()
	desc := func(f family, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(f.name, f.help, labels, constLabels)
	}
	c.requests = desc(c.names.requests, names)
	c.latency = desc(c.names.latency, latencyLabels)
	c.dropped = desc(c.names.dropped, nil)
	c.dictBytes = desc(c.names.dictBytes, nil)
	c.dictFree = desc(c.names.dictFree, nil)
	c.luaDictBytes = desc(c.names.luaDictBytes, []string{"dict"})
	c.luaDictFree = desc(c.names.luaDictFree, []string{"dict"})
	c.readErrorsDesc = desc(c.names.readErrors, nil)
	for _, h := range histograms {
		c.histograms[h.code] = desc(c.names.histograms[h.code], names)
	}
	return c
}

// labelNames are the request series' labels, in the order of the Lua
// keys; host only per host.
func (c *RequestCollector) labelNames() []string {
	if c.perHost {
		return requestLabels
	}
	return requestLabels[:len(requestLabels)-1]
}

// Describe implements prometheus.Collector.
func (c *RequestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.latency
	for _, d := range c.histograms {
		ch <- d
	}
	ch <- c.dropped
	ch <- c.dictBytes
	ch <- c.dictFree
	ch <- c.luaDictBytes
	ch <- c.luaDictFree
	ch <- c.readErrorsDesc
}

// scrapeTimeout bounds one read of NGINX's aggregates: a scrape waits
// for it.
const scrapeTimeout = 10 * time.Second

// Collect implements prometheus.Collector: one read of NGINX's dict.
func (c *RequestCollector) Collect(ch chan<- prometheus.Metric) {
	d, err := c.read()
	if err == nil {
		c.emit(ch, d)
	}
	ch <- prometheus.MustNewConstMetric(c.readErrorsDesc, prometheus.CounterValue, float64(c.readErrors.Load()))
}

// read is one read of NGINX's aggregates; a failure is counted and
// reported.
func (c *RequestCollector) read() (dump, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	data, err := c.fetch(ctx)
	if err == nil {
		var d dump
		if d, err = parseDump(data); err == nil {
			return d, nil
		}
	}
	c.readErrors.Add(1)
	if c.onError != nil {
		c.onError(err)
	}
	return dump{}, err
}

func (c *RequestCollector) emit(ch chan<- prometheus.Metric, d dump) {
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, d.dropped)
	ch <- prometheus.MustNewConstMetric(c.dictBytes, prometheus.GaugeValue, d.capacity)
	ch <- prometheus.MustNewConstMetric(c.dictFree, prometheus.GaugeValue, d.free)
	for name, use := range d.dicts {
		ch <- prometheus.MustNewConstMetric(c.luaDictBytes, prometheus.GaugeValue, use.Capacity, name)
		ch <- prometheus.MustNewConstMetric(c.luaDictFree, prometheus.GaugeValue, use.Free, name)
	}
	all := c.current(d.aggregate(c.perHost, c.statusClasses))
	for _, s := range all {
		if rd := s.hists[requestCountCode]; rd != nil && !c.excluded["requests"] {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(rd.count()), s.labels...)
		}
		for _, h := range histograms {
			v := s.hists[h.code]
			if v == nil || c.excluded[h.name] {
				continue
			}
			ch <- prometheus.MustNewConstHistogram(c.histograms[h.code], v.count(), v.sum, v.cumulative(d.buckets[h.code]), s.labels...)
		}
	}
	if c.excluded["ingress_upstream_latency_seconds"] {
		return
	}
	for _, l := range upstreamLatency(all) {
		ch <- prometheus.MustNewConstSummary(c.latency, l.count, l.sum, nil, l.labels...)
	}
}

// current leaves out the series of deleted Ingresses; those of no
// Ingress (the catch-all) stay.
func (c *RequestCollector) current(all []*series) []*series {
	if c.ingresses == nil {
		return all
	}
	out := all[:0]
	for _, s := range all {
		// s.labels: status, method, path, namespace, ingress, ...
		if s.labels[4] == "" || c.ingresses.Has(s.labels[3], s.labels[4]) {
			out = append(out, s)
		}
	}
	return out
}

// latencyLabels are ingress_upstream_latency_seconds's labels.
var latencyLabels = []string{"ingress", "namespace", "service", "canary"}

type latency struct {
	labels []string
	count  uint64
	sum    float64
}

// upstreamLatency sums connect_duration_seconds by latencyLabels.
func upstreamLatency(all []*series) []latency {
	by := map[[4]string]*latency{}
	for _, s := range all {
		h := s.hists["cd"]
		if h == nil {
			continue
		}
		// s.labels: status, method, path, namespace, ingress, service, canary[, host]
		k := [4]string{s.labels[4], s.labels[3], s.labels[5], s.labels[6]}
		l := by[k]
		if l == nil {
			l = &latency{labels: k[:]}
			by[k] = l
		}
		l.count += h.count()
		l.sum += h.sum
	}
	out := make([]latency, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	return out
}

// dump is what GET /metrics of the configuration endpoint answers.
type dump struct {
	buckets map[string][]float64
	// raw are the series as NGINX keyed them, by label values (all of
	// requestLabels, host as the server's name).
	raw            map[string]*series
	dropped        float64
	capacity, free float64
	// dicts is the use of the dynamic configuration's dicts.
	dicts map[string]dictUse
}

// series is one label set and its histograms by code.
type series struct {
	labels []string
	hists  map[string]*hist
}

// hist holds a histogram's buckets as NGINX counts them (not cumulative,
// the last one +Inf) and its sum.
type hist struct {
	buckets []uint64
	sum     float64
}

func (h *hist) count() uint64 {
	var n uint64
	for _, b := range h.buckets {
		n += b
	}
	return n
}

// cumulative is Prometheus's form of the buckets: by upper bound, each
// counting every observation up to it.
func (h *hist) cumulative(bounds []float64) map[float64]uint64 {
	out := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, b := range bounds {
		n += h.buckets[i]
		out[b] = n
	}
	return out
}

// maxBuckets bounds the bucket lists NGINX may announce.
const maxBuckets = 64

// parseDump reads NGINX's answer: a JSON line of the bucket bounds and
// the dicts' use, then a "<key>\t<value>" line per key (metrics.lua's
// serve).
func parseDump(data []byte) (dump, error) {
	head, values, _ := bytes.Cut(data, []byte("\n"))
	var in struct {
		Buckets  map[string][]float64 `json:"buckets"`
		Capacity float64              `json:"capacity"`
		Free     float64              `json:"free"`
		Dicts    map[string]dictUse   `json:"dicts"`
	}
	if err := json.Unmarshal(head, &in); err != nil {
		return dump{}, fmt.Errorf("decode NGINX's request metrics: %w", err)
	}
	d := dump{buckets: map[string][]float64{}, raw: map[string]*series{}, capacity: in.Capacity, free: in.Free, dicts: map[string]dictUse{}}
	for name, use := range in.Dicts {
		// Only the dicts the configuration declares: a bounded label.
		if slices.Contains(configDicts, name) {
			d.dicts[name] = use
		}
	}
	for _, h := range histograms {
		b := in.Buckets[h.code]
		if len(b) == 0 || len(b) > maxBuckets || !slices.IsSorted(b) {
			return dump{}, fmt.Errorf("NGINX's request metrics: bad buckets %v for %s", b, h.name)
		}
		d.buckets[h.code] = b
	}
	for len(values) > 0 {
		var line []byte
		line, values, _ = bytes.Cut(values, []byte("\n"))
		// The key may hold a tab; the value, a number, does not.
		tab := bytes.LastIndexByte(line, '\t')
		if tab < 0 {
			continue
		}
		v, err := strconv.ParseFloat(string(line[tab+1:]), 64)
		if err != nil {
			continue
		}
		key := string(line[:tab])
		if key == "dropped" {
			d.dropped = v
			continue
		}
		// A key this version does not know (an older NGINX still
		// draining, say) is left out.
		d.add(key, v)
	}
	return d, nil
}

// add records one dict value: "<code>\x01<bucket index or s>\x01<labels>".
// A scrape adds some 14 values per label set: the labels are split once,
// for the first.
func (d *dump) add(key string, v float64) bool {
	code, rest, ok := strings.Cut(key, "\x01")
	if !ok {
		return false
	}
	slot, labelKey, ok := strings.Cut(rest, "\x01")
	if !ok {
		return false
	}
	bounds, ok := d.buckets[code]
	if !ok {
		return false
	}
	s := d.raw[labelKey]
	if s == nil {
		labels := strings.Split(labelKey, "\x01")
		if len(labels) != len(requestLabels) {
			return false
		}
		s = &series{labels: labels, hists: map[string]*hist{}}
		d.raw[labelKey] = s
	}
	h := s.hists[code]
	if h == nil {
		h = &hist{buckets: make([]uint64, len(bounds)+1)}
		s.hists[code] = h
	}
	if slot == "s" {
		h.sum += v
		return true
	}
	i, err := strconv.Atoi(slot)
	if err != nil || i < 1 || i > len(h.buckets) || v < 0 {
		return false
	}
	h.buckets[i-1] += uint64(v)
	return true
}

// aggregate are the series to export: the host label made readable, or
// dropped and its series merged when metrics are not per host; with
// statusClasses, the status is its class ("2xx"), series merged too.
func (d *dump) aggregate(perHost, statusClasses bool) []*series {
	out := map[string]*series{}
	for _, s := range d.raw {
		labels := slices.Clone(s.labels)
		for i, v := range labels {
			labels[i] = strings.ToValidUTF8(v, string(utf8.RuneError))
		}
		if statusClasses && labels[0] != "" {
			labels[0] = labels[0][:1] + "xx"
		}
		last := len(labels) - 1
		if perHost {
			labels[last] = hostLabel(labels[last])
		} else {
			labels = labels[:last]
		}
		key := strings.Join(labels, "\x01")
		agg := out[key]
		if agg == nil {
			agg = &series{labels: labels, hists: map[string]*hist{}}
			out[key] = agg
		}
		for code, h := range s.hists {
			if h.count() == 0 {
				continue // a sum without buckets: its bucket was dropped
			}
			a := agg.hists[code]
			if a == nil {
				a = &hist{buckets: make([]uint64, len(h.buckets))}
				agg.hists[code] = a
			}
			for i, b := range h.buckets {
				a.buckets[i] += b
			}
			a.sum += h.sum
		}
	}
	result := make([]*series, 0, len(out))
	for _, s := range out {
		if len(s.hists) > 0 {
			result = append(result, s)
		}
	}
	return result
}

// wildcardServerName is how the renderer writes a wildcard host's
// server_name (stages/renderer: serverName).
var wildcardServerName = regexp.MustCompile(`^~?\^\[\^\.\]\+\\\.(.+)\$$`)

// hostLabel is the host label of a server name: the Ingress host, also
// for a wildcard ("*.example.com"); "_" for the catch-all, which serves
// every host no Ingress names, folded into that one value.
func hostLabel(serverName string) string {
	if serverName == "" {
		return "_"
	}
	if m := wildcardServerName.FindStringSubmatch(serverName); m != nil {
		return "*." + strings.ReplaceAll(m[1], `\.`, ".")
	}
	return serverName
}

// maxDumpBytes bounds what one scrape reads from NGINX.
const maxDumpBytes = 256 << 20

// unixGetter GETs path from the configuration endpoint's unix socket.
func unixGetter(socket, path string) func(context.Context) ([]byte, error) {
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://switchyard"+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read NGINX's %s: %w", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxDumpBytes))
		if err != nil {
			return nil, fmt.Errorf("read NGINX's %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("read NGINX's %s: %s: %.200s", path, resp.Status, body)
		}
		return body, nil
	}
}

// RegisterRequests adds the per-request series to the scrape.
func (c *Collector) RegisterRequests(r *RequestCollector) {
	c.requests.Store(r)
}

// configDicts are the dynamic configuration's dicts NGINX reports the use
// of (lua/switchyard/metrics.lua's CONFIG_DICTS).
var configDicts = []string{"switchyard_config", "switchyard_certs"}

// dictUse is one shared dict's size and free space, in bytes.
type dictUse struct {
	Capacity float64 `json:"capacity"`
	Free     float64 `json:"free"`
}
