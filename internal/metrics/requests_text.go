package metrics

// The per-request series written straight in Prometheus's text format.
//
// With 1,000 Ingresses of traffic a scrape holds some 200,000 sample lines
// (about 90 per label set: every bucket of seven histograms). Through
// client_golang each line is a protobuf metric built, sorted and encoded
// label by label; here each label set's labels are escaped and joined
// once, and a line is that prefix, its bucket and its value. The output is
// the one expfmt writes for the same series, byte for byte
// (TestRequestTextMatchesClientGolang): families sorted by name, series by
// label values, labels by name, numbers formatted alike. Scrapes that ask
// for protobuf still go through client_golang (Collect).

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"
)

// writeText reads NGINX's aggregates and writes every family Collect
// would, in the text format.
func (c *RequestCollector) writeText(w *bufio.Writer) error {
	d, err := c.read()
	t := textWriter{w: w, constLabels: c.constLabels}
	if err != nil {
		t.family(c.names.readErrors, "counter", true, func() {
			t.sample(c.names.readErrors.name, "", t.labels(nil, nil), "", float64(c.readErrors.Load()))
		})
		return t.w.Flush()
	}
	all := c.current(d.aggregate(c.perHost, c.statusClasses))
	var families []textFamily
	families = append(families, c.requestFamilies(&t, all, d)...)
	families = append(families, c.dictFamilies(&t, d)...)
	slices.SortFunc(families, func(a, b textFamily) int { return strings.Compare(a.name, b.name) })
	for _, f := range families {
		f.write()
	}
	return t.w.Flush()
}

// textFamily writes one family, in its place in the name order.
type textFamily struct {
	name  string
	write func()
}

// requestFamilies are the requests counter, the histograms and the
// upstream latency summary.
func (c *RequestCollector) requestFamilies(t *textWriter, all []*series, d dump) []textFamily {
	names := c.labelNames()
	order := sortedLabelOrder(names, c.constLabels)
	slices.SortFunc(all, func(a, b *series) int { return compareLabels(a.labels, b.labels, order) })
	prefixes := make([]string, len(all))
	for i, s := range all {
		prefixes[i] = t.labels(names, s.labels)
	}
	var out []textFamily
	if !c.excluded["requests"] {
		f := c.names.requests
		out = append(out, textFamily{f.name, func() {
			t.family(f, "counter", has(all, requestCountCode), func() {
				for i, s := range all {
					if rd := s.hists[requestCountCode]; rd != nil {
						t.sample(f.name, "", prefixes[i], "", float64(rd.count()))
					}
				}
			})
		}})
	}
	for _, h := range histograms {
		if c.excluded[h.name] {
			continue
		}
		f := c.names.histograms[h.code]
		bounds := boundLabels(d.buckets[h.code])
		out = append(out, textFamily{f.name, func() {
			t.family(f, "histogram", has(all, h.code), func() {
				for i, s := range all {
					if v := s.hists[h.code]; v != nil {
						t.histogram(f.name, prefixes[i], bounds, v)
					}
				}
			})
		}})
	}
	if !c.excluded["ingress_upstream_latency_seconds"] {
		f := c.names.latency
		out = append(out, textFamily{f.name, func() { c.writeLatency(t, f, upstreamLatency(all)) }})
	}
	return out
}

func (c *RequestCollector) writeLatency(t *textWriter, f family, latencies []latency) {
	order := sortedLabelOrder(latencyLabels, c.constLabels)
	slices.SortFunc(latencies, func(a, b latency) int { return compareLabels(a.labels, b.labels, order) })
	t.family(f, "summary", len(latencies) > 0, func() {
		for _, l := range latencies {
			prefix := t.labels(latencyLabels, l.labels)
			t.sample(f.name, "_sum", prefix, "", l.sum)
			t.sample(f.name, "_count", prefix, "", float64(l.count))
		}
	})
}

// dictFamilies are the dicts' use, the dropped requests and the read
// errors.
func (c *RequestCollector) dictFamilies(t *textWriter, d dump) []textFamily {
	single := func(f family, typ string, v float64) textFamily {
		return textFamily{f.name, func() {
			t.family(f, typ, true, func() { t.sample(f.name, "", t.labels(nil, nil), "", v) })
		}}
	}
	dicts := make([]string, 0, len(d.dicts))
	for name := range d.dicts {
		dicts = append(dicts, name)
	}
	slices.Sort(dicts)
	perDict := func(f family, value func(dictUse) float64) textFamily {
		return textFamily{f.name, func() {
			t.family(f, "gauge", len(dicts) > 0, func() {
				for _, name := range dicts {
					t.sample(f.name, "", t.labels([]string{"dict"}, []string{name}), "", value(d.dicts[name]))
				}
			})
		}}
	}
	return []textFamily{
		single(c.names.dropped, "counter", d.dropped),
		single(c.names.dictBytes, "gauge", d.capacity),
		single(c.names.dictFree, "gauge", d.free),
		single(c.names.readErrors, "counter", float64(c.readErrors.Load())),
		perDict(c.names.luaDictBytes, func(u dictUse) float64 { return u.Capacity }),
		perDict(c.names.luaDictFree, func(u dictUse) float64 { return u.Free }),
	}
}

// has says whether a series has histogram code.
func has(all []*series, code string) bool {
	for _, s := range all {
		if s.hists[code] != nil {
			return true
		}
	}
	return false
}

// sortedLabelOrder is the order client_golang writes and sorts by: the
// indexes into names of the variable labels, by name, with -1 where a
// constant label falls.
func sortedLabelOrder(names []string, constLabels [][2]string) []int {
	type named struct {
		name  string
		index int
	}
	all := make([]named, 0, len(names)+len(constLabels))
	for i, n := range names {
		all = append(all, named{n, i})
	}
	for _, l := range constLabels {
		all = append(all, named{l[0], -1})
	}
	slices.SortFunc(all, func(a, b named) int { return strings.Compare(a.name, b.name) })
	order := make([]int, len(all))
	for i, n := range all {
		order[i] = n.index
	}
	return order
}

// compareLabels orders two label sets as client_golang orders a family's
// metrics: by value, label by label in name order (the constant labels
// are equal).
func compareLabels(a, b []string, order []int) int {
	for _, i := range order {
		if i < 0 {
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// boundLabels are a histogram's le values, +Inf last.
func boundLabels(bounds []float64) []string {
	out := make([]string, 0, len(bounds)+1)
	for _, b := range bounds {
		out = append(out, string(appendFloat(nil, b)))
	}
	return append(out, "+Inf")
}

// textWriter writes samples; scratch is the line being built.
type textWriter struct {
	w           *bufio.Writer
	constLabels [][2]string
	scratch     []byte
}

// family writes the HELP and TYPE lines, then the samples; nothing for
// a family without samples (client_golang leaves it out).
func (t *textWriter) family(f family, typ string, nonEmpty bool, samples func()) {
	if !nonEmpty {
		return
	}
	_, _ = t.w.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n# TYPE " + f.name + " " + typ + "\n")
	samples()
}

// labels is `{name="value",...` with the constant labels, sorted by
// name, values escaped: a line's start after its name, without the "}".
func (t *textWriter) labels(names, values []string) string {
	pairs := slices.Clone(t.constLabels)
	for i, n := range names {
		pairs = append(pairs, [2]string{n, values[i]})
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b []byte
	for i, p := range pairs {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, p[0]...)
		b = append(b, `="`...)
		b = appendEscaped(b, p[1])
		b = append(b, '"')
	}
	return string(b)
}

// sample writes name+suffix, the labels (and le), and the value.
func (t *textWriter) sample(name, suffix, labels, le string, v float64) {
	b := append(t.scratch[:0], name...)
	b = append(b, suffix...)
	b = append(b, labels...)
	if le != "" {
		b = append(b, `,le="`...)
		b = append(b, le...)
		b = append(b, '"')
	}
	b = append(b, "} "...)
	b = appendFloat(b, v)
	b = append(b, '\n')
	_, _ = t.w.Write(b)
	t.scratch = b
}

// histogram writes the cumulative buckets, sum and count of h.
func (t *textWriter) histogram(name, labels string, bounds []string, h *hist) {
	var n uint64
	for i, le := range bounds {
		n += h.buckets[i]
		t.sample(name, "_bucket", labels, le, float64(n))
	}
	t.sample(name, "_sum", labels, "", h.sum)
	t.sample(name, "_count", labels, "", float64(n))
}

// appendFloat formats as expfmt does (its writeFloat).
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendEscaped escapes a label value as expfmt does: backslash, newline
// and double quote.
func appendEscaped(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\\\n\"") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '"':
			b = append(b, `\"`...)
		default:
			b = append(b, v[i])
		}
	}
	return b
}

// escapeHelp escapes a HELP text as expfmt does: backslash and newline.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
