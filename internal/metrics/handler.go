package metrics

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// metricsHandler serves /metrics. A scrape in the text format (what
// Prometheus asks for unless it wants native histograms) gets the
// registry's families from client_golang and the per-request series from
// RequestCollector.writeText, which writes the same text several times
// faster; any other format gets everything through client_golang.
func (c *Collector) metricsHandler() http.Handler {
	generic := promhttp.HandlerFor(prometheus.GathererFunc(c.gatherAll), promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests := c.requests.Load()
		format := expfmt.Negotiate(r.Header)
		if requests == nil || format.FormatType() != expfmt.TypeTextPlain {
			generic.ServeHTTP(w, r)
			return
		}
		c.serveText(w, r, format, requests)
	})
}

// gatherAll is the registry's families and the per-request ones.
func (c *Collector) gatherAll() ([]*dto.MetricFamily, error) {
	gatherers := prometheus.Gatherers{c.registry}
	if requests := c.requests.Load(); requests != nil {
		r := prometheus.NewRegistry()
		if err := r.Register(requests); err != nil {
			return nil, fmt.Errorf("register the request series: %w", err)
		}
		gatherers = append(gatherers, r)
	}
	return gatherers.Gather()
}

// serveText writes the text format, gzipped when the client accepts it
// (at the fastest level: the text is tens of MB of repeated labels).
func (c *Collector) serveText(w http.ResponseWriter, r *http.Request, format expfmt.Format, requests *RequestCollector) {
	families, err := c.registry.Gather()
	if err != nil {
		// As promhttp's HTTPErrorOnError.
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", string(format))
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		defer gz.Close()
		out = gz
	}
	buf := bufio.NewWriterSize(out, 64<<10)
	enc := expfmt.NewEncoder(buf, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return // the client went away; as promhttp, stop
		}
	}
	_ = requests.writeText(buf)
}

// acceptsGzip says whether an Accept-Encoding value allows gzip (not with
// q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
