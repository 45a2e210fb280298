package metrics

// NGINX's own series, as ingress-nginx's nginx_status and process
// collectors name them: connections and requests from stub_status (served
// only on the configuration endpoint's unix socket), and CPU, memory, I/O
// and the number of processes from /proc for the master the pid file
// names and its children.

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// ProcessCollector exposes nginx_ingress_controller_nginx_process_*.
type ProcessCollector struct {
	status  func(context.Context) ([]byte, error)
	pidFile string
	proc    string // /proc, or a test's
	onError func(error)

	connections, connectionsTotal, requestsTotal *prometheus.Desc
	numProcs, cpu, resident, virtual, oldest     *prometheus.Desc
	readBytes, writeBytes                        *prometheus.Desc

	// Counters must not drop when a worker exits (every reload replaces
	// them): what each live process used is added as it grows, and what
	// an exited one used stays in the totals.
	mu     sync.Mutex
	seen   map[int]usage
	totals usage
}

// usage is what a process consumed so far.
type usage struct {
	cpu                   float64
	readBytes, writeBytes uint64
}

// NewProcessCollector reads stub_status from the configuration endpoint
// at socket and the processes of the master whose pid is in pidFile.
func NewProcessCollector(l Labels, socket, pidFile string, onError func(error)) *ProcessCollector {
	return newProcessCollector(l, unixGetter(socket, "/nginx_status"), pidFile, procfs.DefaultMountPoint, onError)
}

func newProcessCollector(l Labels, status func(context.Context) ([]byte, error), pidFile, proc string, onError func(error)) *ProcessCollector {
	constLabels := prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("nginx", "ingress_controller", "nginx_process_"+name), help, labels, constLabels)
	}
	return &ProcessCollector{
		status: status, pidFile: pidFile, proc: proc, onError: onError, seen: map[int]usage{},
		connections:      desc("connections", "current number of client connections with state {active, reading, writing, waiting}", "state"),
		connectionsTotal: desc("connections_total", "total number of connections with state {accepted, handled}", "state"),
		requestsTotal:    desc("requests_total", "total number of client requests"),
		numProcs:         desc("num_procs", "number of processes"),
		cpu:              desc("cpu_seconds_total", "Cpu usage in seconds"),
		resident:         desc("resident_memory_bytes", "number of bytes of memory in use"),
		virtual:          desc("virtual_memory_bytes", "number of bytes of memory in use"),
		oldest:           desc("oldest_start_time_seconds", "start time in seconds since 1970/01/01"),
		readBytes:        desc("read_bytes_total", "number of bytes read"),
		writeBytes:       desc("write_bytes_total", "number of bytes written"),
	}
}

// Describe implements prometheus.Collector.
func (c *ProcessCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connections, c.connectionsTotal, c.requestsTotal, c.numProcs, c.cpu,
		c.resident, c.virtual, c.oldest, c.readBytes, c.writeBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. What cannot be read (NGINX not
// started yet) is left out of the scrape and reported to onError.
func (c *ProcessCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if err := c.collectStatus(ctx, ch); err != nil && c.onError != nil {
		c.onError(err)
	}
	if err := c.collectProcesses(ch); err != nil && c.onError != nil {
		c.onError(err)
	}
}

func (c *ProcessCollector) collectStatus(ctx context.Context, ch chan<- prometheus.Metric) error {
	body, err := c.status(ctx)
	if err != nil {
		return err
	}
	s, err := parseStubStatus(string(body))
	if err != nil {
		return err
	}
	for state, v := range map[string]float64{"active": s.active, "reading": s.reading, "writing": s.writing, "waiting": s.waiting} {
		ch <- prometheus.MustNewConstMetric(c.connections, prometheus.GaugeValue, v, state)
	}
	ch <- prometheus.MustNewConstMetric(c.connectionsTotal, prometheus.CounterValue, s.accepted, "accepted")
	ch <- prometheus.MustNewConstMetric(c.connectionsTotal, prometheus.CounterValue, s.handled, "handled")
	ch <- prometheus.MustNewConstMetric(c.requestsTotal, prometheus.CounterValue, s.requests)
	return nil
}

// stubStatus is what NGINX's stub_status reports.
type stubStatus struct {
	active, accepted, handled, requests, reading, writing, waiting float64
}

// stubStatusPattern is stub_status's whole answer.
var stubStatusPattern = regexp.MustCompile(`^Active connections: (\d+) \nserver accepts handled requests\n (\d+) (\d+) (\d+) \nReading: (\d+) Writing: (\d+) Waiting: (\d+) \n$`)

func parseStubStatus(s string) (stubStatus, error) {
	m := stubStatusPattern.FindStringSubmatch(s)
	if m == nil {
		return stubStatus{}, fmt.Errorf("NGINX's stub_status: unexpected answer %.200q", s)
	}
	var v [7]float64
	for i := range v {
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil {
			return stubStatus{}, fmt.Errorf("NGINX's stub_status: %w", err)
		}
		v[i] = float64(n)
	}
	return stubStatus{active: v[0], accepted: v[1], handled: v[2], requests: v[3], reading: v[4], writing: v[5], waiting: v[6]}, nil
}

func (c *ProcessCollector) collectProcesses(ch chan<- prometheus.Metric) error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var resident, virtual float64
	oldest := 0.0
	live := map[int]usage{}
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // exited since the listing
		}
		u := usage{cpu: stat.CPUTime()}
		if io, err := p.IO(); err == nil {
			u.readBytes, u.writeBytes = io.ReadBytes, io.WriteBytes
		}
		c.add(p.PID, u)
		live[p.PID] = u
		resident += float64(stat.ResidentMemory())
		virtual += float64(stat.VirtualMemory())
		if start, err := stat.StartTime(); err == nil && (oldest == 0 || start < oldest) {
			oldest = start
		}
	}
	c.seen = live
	ch <- prometheus.MustNewConstMetric(c.numProcs, prometheus.GaugeValue, float64(len(live)))
	ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, c.totals.cpu)
	ch <- prometheus.MustNewConstMetric(c.resident, prometheus.GaugeValue, resident)
	ch <- prometheus.MustNewConstMetric(c.virtual, prometheus.GaugeValue, virtual)
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, oldest)
	ch <- prometheus.MustNewConstMetric(c.readBytes, prometheus.CounterValue, float64(c.totals.readBytes))
	ch <- prometheus.MustNewConstMetric(c.writeBytes, prometheus.CounterValue, float64(c.totals.writeBytes))
	return nil
}

// add counts what process pid used since the last scrape.
func (c *ProcessCollector) add(pid int, u usage) {
	prev := c.seen[pid]
	if u.cpu >= prev.cpu {
		c.totals.cpu += u.cpu - prev.cpu
	}
	if u.readBytes >= prev.readBytes {
		c.totals.readBytes += u.readBytes - prev.readBytes
	}
	if u.writeBytes >= prev.writeBytes {
		c.totals.writeBytes += u.writeBytes - prev.writeBytes
	}
}

// processes are the master the pid file names and its children.
func (c *ProcessCollector) processes() ([]procfs.Proc, error) {
	data, err := os.ReadFile(c.pidFile)
	if err != nil {
		return nil, fmt.Errorf("NGINX's processes: %w", err)
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || master <= 1 {
		return nil, fmt.Errorf("NGINX's processes: pid file %s holds %.20q", c.pidFile, data)
	}
	fs, err := procfs.NewFS(c.proc)
	if err != nil {
		return nil, fmt.Errorf("NGINX's processes: %w", err)
	}
	all, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("NGINX's processes: %w", err)
	}
	var out []procfs.Proc
	for _, p := range all {
		if p.PID == master {
			out = append(out, p)
			continue
		}
		if stat, err := p.Stat(); err == nil && stat.PPID == master {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("NGINX's processes: no process %d", master)
	}
	return out, nil
}

// RegisterProcess adds NGINX's process series to the scrape.
func (c *Collector) RegisterProcess(p *ProcessCollector) {
	c.registry.MustRegister(p)
}
