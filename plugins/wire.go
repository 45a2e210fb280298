package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"switchyard.dev/switchyard/plugins/pluginpb"
)

// ProtocolVersion is the version of the wire protocol this package speaks.
// A breaking change to pluginpb bumps it; the host then serves both
// versions side by side (go-plugin's VersionedPlugins) until plugins built
// against the old SDK are gone.
const ProtocolVersion = 1

// handshake keeps a plugin binary from being run by hand (it would wait
// for a host forever) and refuses a plugin of another protocol version.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SWITCHYARD_ANNOTATION_PLUGIN",
	MagicCookieValue: "f3b1c2a4-annotations",
}

// dispenseName is the one service a plugin process serves.
const dispenseName = "annotations"

// Serve runs p as a plugin process until the host stops it. Call it from
// main; it does not return.
func Serve(p Plugin) {
	host, _ := strconv.Atoi(os.Getenv(hostPIDEnv))
	go exitWithParent(os.Getppid(), host, time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			ProtocolVersion: {dispenseName: &grpcPlugin{impl: p}},
		},
		GRPCServer: plugin.DefaultGRPCServer,
		Logger:     hclog.New(&hclog.LoggerOptions{Level: hclog.Warn}),
	})
}

// grpcPlugin binds a Plugin to go-plugin's gRPC transport, on either side.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Plugin
}

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterAnnotationsServer(s, &server{impl: g.impl})
	return nil
}

func (g *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginpb.NewAnnotationsClient(c), nil
}

// server answers the host's calls in the plugin process.
type server struct {
	pluginpb.UnimplementedAnnotationsServer
	impl Plugin
}

func (s *server) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.Description, error) {
	return descriptionToWire(s.impl.Describe()), nil
}

func (s *server) Apply(_ context.Context, req *pluginpb.ApplyRequest) (resp *pluginpb.ApplyResponse, err error) {
	// A panicking plugin fails the call, not the process: the host then
	// fails those Ingresses closed and the next call starts clean.
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("plugin panicked: %v", r)
		}
	}()
	batch := make([]Ingress, len(req.Ingresses))
	for i, in := range req.Ingresses {
		batch[i] = ingressFromWire(in)
	}
	results := s.impl.Apply(batch)
	resp = &pluginpb.ApplyResponse{Results: make([]*pluginpb.Result, 0, len(results))}
	for _, r := range results {
		w, err := resultToWire(r)
		if err != nil {
			return nil, err
		}
		resp.Results = append(resp.Results, w)
	}
	return resp, nil
}

// Client is the host's handle on one running plugin process. It is for
// the annotations stage; plugin authors never need it.
type Client struct {
	process *plugin.Client
	rpc     pluginpb.AnnotationsClient
	ping    func() error
}

// Launch starts the plugin program cmd and connects to it. logger receives
// what the plugin writes to stderr.
func Launch(cmd *exec.Cmd, logger hclog.Logger) (*Client, error) {
	// The plugin dies with the host, however the host dies (kill -9, the
	// OOM killer): it must not linger with parent 1, holding memory.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Env = append(cmd.Env, hostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	type launched struct {
		client *Client
		err    error
	}
	result := make(chan launched, 1)
	// Pdeathsig fires when the OS thread that forked the child ends, not
	// the process (Go issue 27505): start it from a locked thread that
	// lives as long as the plugin does.
	go func() {
		runtime.LockOSThread()
		c, err := launch(cmd, logger)
		result <- launched{c, err}
		for err == nil && !c.Exited() {
			time.Sleep(time.Second)
		}
		// Returning without unlocking ends the thread: only once the
		// plugin is gone, so its parent-death signal cannot fire early.
	}()
	r := <-result
	return r.client, r.err
}

// hostPIDEnv tells a plugin the pid of the host that launched it.
const hostPIDEnv = "SWITCHYARD_PLUGIN_HOST_PID"

// exitWithParent ends the plugin process when its parent changes (the
// parent died and the process was handed to init or a subreaper) or the
// host process is gone: the host may have died before this process looked
// at its parent. This backs up the parent-death signal for hosts that set
// none; host is 0 when unknown.
func exitWithParent(parent, host int, every time.Duration) {
	for {
		time.Sleep(every)
		if os.Getppid() != parent || (host > 0 && syscall.Kill(host, 0) == syscall.ESRCH) {
			os.Exit(1)
		}
	}
}

func launch(cmd *exec.Cmd, logger hclog.Logger) (*Client, error) {
	process := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			ProtocolVersion: {dispenseName: &grpcPlugin{}},
		},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
		// The plugin's stdout carries the handshake only; a stray print
		// there must not reach the host's stdout.
		SyncStdout: nil,
	})
	proto, err := process.Client()
	if err != nil {
		process.Kill()
		return nil, fmt.Errorf("start plugin %s: %w", cmd.Path, err)
	}
	raw, err := proto.Dispense(dispenseName)
	if err != nil {
		process.Kill()
		return nil, fmt.Errorf("start plugin %s: %w", cmd.Path, err)
	}
	rpc, ok := raw.(pluginpb.AnnotationsClient)
	if !ok {
		process.Kill()
		return nil, fmt.Errorf("start plugin %s: protocol version %d has no annotations service", cmd.Path, process.NegotiatedVersion())
	}
	return &Client{process: process, rpc: rpc, ping: proto.Ping}, nil
}

// Describe asks the plugin what it owns.
func (c *Client) Describe(ctx context.Context) (Description, error) {
	d, err := c.rpc.Describe(ctx, &pluginpb.DescribeRequest{})
	if err != nil {
		return Description{}, err
	}
	return descriptionFromWire(d), nil
}

// Apply sends one batch and returns the plugin's results.
func (c *Client) Apply(ctx context.Context, batch []Ingress) ([]Result, error) {
	req := &pluginpb.ApplyRequest{Ingresses: make([]*pluginpb.Ingress, len(batch))}
	for i, in := range batch {
		req.Ingresses[i] = ingressToWire(in)
	}
	resp, err := c.rpc.Apply(ctx, req, grpc.MaxCallRecvMsgSize(64<<20))
	if err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(resp.Results))
	for _, r := range resp.Results {
		res, err := resultFromWire(r)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}

// Ping checks that the plugin answers.
func (c *Client) Ping() error { return c.ping() }

// Exited reports whether the plugin process has ended.
func (c *Client) Exited() bool { return c.process.Exited() }

// Kill stops the plugin process.
func (c *Client) Kill() { c.process.Kill() }

// Pid is the plugin process's id, for logs and tests.
func (c *Client) Pid() int {
	if rc := c.process.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

func descriptionToWire(d Description) *pluginpb.Description {
	w := &pluginpb.Description{Name: d.Name, Doc: d.Doc}
	for _, a := range d.Annotations {
		w.Annotations = append(w.Annotations, &pluginpb.AnnotationSpec{
			Key: a.Key, Pattern: a.Pattern, Scope: pluginpb.Scope(a.Scope), Risk: pluginpb.Risk(a.Risk),
			Doc: a.Doc, Default: a.Default, Aliases: a.Aliases, SecretRef: a.SecretRef,
		})
	}
	return w
}

func descriptionFromWire(w *pluginpb.Description) Description {
	d := Description{Name: w.Name, Doc: w.Doc}
	for _, a := range w.Annotations {
		d.Annotations = append(d.Annotations, Annotation{
			Key: a.Key, Pattern: a.Pattern, Scope: Scope(a.Scope), Risk: Risk(a.Risk),
			Doc: a.Doc, Default: a.Default, Aliases: a.Aliases, SecretRef: a.SecretRef,
		})
	}
	return d
}

func ingressToWire(in Ingress) *pluginpb.Ingress {
	w := &pluginpb.Ingress{Namespace: in.Namespace, Name: in.Name, Annotations: in.Annotations}
	if len(in.Secrets) > 0 {
		w.Secrets = make(map[string]*pluginpb.Secret, len(in.Secrets))
		for k, data := range in.Secrets {
			w.Secrets[k] = &pluginpb.Secret{Data: data}
		}
	}
	return w
}

func ingressFromWire(w *pluginpb.Ingress) Ingress {
	in := Ingress{Namespace: w.Namespace, Name: w.Name, Annotations: maps.Clone(w.Annotations)}
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	if len(w.Secrets) > 0 {
		in.Secrets = make(map[string]map[string][]byte, len(w.Secrets))
		for k, s := range w.Secrets {
			in.Secrets[k] = s.Data
		}
	}
	return in
}

func resultToWire(r Result) (*pluginpb.Result, error) {
	features, err := json.Marshal(r.Features)
	if err != nil {
		return nil, fmt.Errorf("encode features of %s/%s: %w", r.Namespace, r.Name, err)
	}
	w := &pluginpb.Result{Namespace: r.Namespace, Name: r.Name, Features: features}
	for _, e := range r.Errors {
		w.Errors = append(w.Errors, &pluginpb.AnnotationError{Key: e.Key, Message: e.Message, Warning: e.Warning})
	}
	return w, nil
}

func resultFromWire(w *pluginpb.Result) (Result, error) {
	r := Result{Namespace: w.Namespace, Name: w.Name}
	if len(w.Features) > 0 {
		if err := json.Unmarshal(w.Features, &r.Features); err != nil {
			return Result{}, fmt.Errorf("decode features of %s/%s: %w", w.Namespace, w.Name, err)
		}
	}
	for _, e := range w.Errors {
		r.Errors = append(r.Errors, Error{Key: e.Key, Message: e.Message, Warning: e.Warning})
	}
	return r, nil
}
