// Package pluginhost is the host side of the annotation plugin protocol:
// it starts a plugin program and calls it over go-plugin's gRPC transport.
// Only the annotations stage uses it; plugin authors need package plugins
// alone, which never links this one.
package pluginhost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"switchyard.dev/switchyard/internal/parallel"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/pluginpb"
)

// handshake is the SDK's (plugins.Serve): same protocol version, same
// cookie.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  pluginpb.ProtocolVersion,
	MagicCookieKey:   pluginpb.MagicCookieKey,
	MagicCookieValue: pluginpb.MagicCookieValue,
}

// grpcClient binds go-plugin's gRPC connection to the annotations client.
type grpcClient struct {
	plugin.NetRPCUnsupportedPlugin
}

func (grpcClient) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return fmt.Errorf("the host serves no plugin")
}

func (grpcClient) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginpb.NewAnnotationsClient(c), nil
}

// Client is the host's handle on one running plugin: its process, and in
// a process of several plugins (a Group's) the plugin's name, which every
// call carries.
type Client struct {
	process *plugin.Client
	// kill stops the process once, shared by every Client of a group's
	// process: go-plugin's Kill, called again while the first call waits
	// for the process to exit, finds the connection closing and kills it
	// with SIGKILL, which leaves its unix socket behind in the temporary
	// directory (one per plugin restart, and one per host stop).
	kill *sync.Once
	// socket is the plugin's unix socket, "" for another transport.
	socket string
	rpc    pluginpb.AnnotationsClient
	ping   func() error
	name   string
}

// Group is one plugin process that serves several plugins
// (plugins.ServeSet; Switchyard's built-ins): the host sees each plugin on
// its own through Client(name), and they all share the process. The
// process starts with the first Client asked for, and again with the first
// one asked for after it ended; killing any of its Clients kills it.
type Group struct {
	command func() *exec.Cmd

	mu      sync.Mutex
	process *Client // nil before the first start
}

// NewGroup returns a group whose process command starts.
func NewGroup(command func() *exec.Cmd) *Group {
	return &Group{command: command}
}

// Client returns the client of the plugin name in the group's process,
// starting the process if it is not running; logger then receives what the
// process writes to stderr.
func (g *Group) Client(name string, logger hclog.Logger) (*Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.process == nil || g.process.Exited() {
		c, err := Launch(g.command(), logger)
		if err != nil {
			return nil, err
		}
		g.process = c
	}
	named := *g.process
	named.name = name
	return &named, nil
}

// callContext names the plugin a call is for, in a group's process.
func (c *Client) callContext(ctx context.Context) context.Context {
	if c.name == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, pluginpb.PluginMetadataKey, c.name)
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
	cmd.Env = append(cmd.Env, pluginpb.HostPIDEnv+"="+strconv.Itoa(os.Getpid()))
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

func launch(cmd *exec.Cmd, logger hclog.Logger) (*Client, error) {
	process := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			pluginpb.ProtocolVersion: {pluginpb.ServiceName: grpcClient{}},
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
	raw, err := proto.Dispense(pluginpb.ServiceName)
	if err != nil {
		process.Kill()
		return nil, fmt.Errorf("start plugin %s: %w", cmd.Path, err)
	}
	rpc, ok := raw.(pluginpb.AnnotationsClient)
	if !ok {
		process.Kill()
		return nil, fmt.Errorf("start plugin %s: protocol version %d has no annotations service", cmd.Path, process.NegotiatedVersion())
	}
	c := &Client{process: process, kill: new(sync.Once), rpc: rpc, ping: proto.Ping}
	if rc := process.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
		c.socket = rc.Addr.String()
	}
	return c, nil
}

// Describe asks the plugin what it owns.
func (c *Client) Describe(ctx context.Context) (plugins.Description, error) {
	d, err := c.rpc.Describe(c.callContext(ctx), &pluginpb.DescribeRequest{})
	if err != nil {
		return plugins.Description{}, err
	}
	return descriptionFromWire(d), nil
}

// Apply sends one batch and returns the plugin's results.
func (c *Client) Apply(ctx context.Context, batch []plugins.Ingress) ([]plugins.Result, error) {
	req := &pluginpb.ApplyRequest{Ingresses: make([]*pluginpb.Ingress, len(batch))}
	for i, in := range batch {
		req.Ingresses[i] = ingressToWire(in)
	}
	resp, err := c.rpc.Apply(c.callContext(ctx), req, grpc.MaxCallRecvMsgSize(64<<20))
	if err != nil {
		return nil, err
	}
	// The features come as JSON, one value per Ingress: decoded on every
	// CPU, since a start's batch holds every Ingress.
	results, errs := make([]plugins.Result, len(resp.Results)), make([]error, len(resp.Results))
	parallel.For(len(resp.Results), 256, func(i int) {
		results[i], errs[i] = resultFromWire(resp.Results[i])
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// Ping checks that the plugin answers.
func (c *Client) Ping() error { return c.ping() }

// Exited reports whether the plugin process has ended.
func (c *Client) Exited() bool { return c.process.Exited() }

// Kill stops the plugin process (a group's: every plugin of it), asking
// it to exit before it is killed; a concurrent call returns once the
// process is gone. A plugin that crashed or had to be killed could not
// remove its unix socket: Kill does.
func (c *Client) Kill() {
	c.kill.Do(func() {
		c.process.Kill()
		if c.socket != "" {
			_ = os.Remove(c.socket) // gone already when the plugin exited by itself
		}
	})
}

// Pid is the plugin process's id, for logs and tests.
func (c *Client) Pid() int {
	if rc := c.process.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

func descriptionFromWire(w *pluginpb.Description) plugins.Description {
	d := plugins.Description{Name: w.Name, Doc: w.Doc}
	for _, a := range w.Annotations {
		d.Annotations = append(d.Annotations, plugins.Annotation{
			Key: a.Key, Pattern: a.Pattern, Scope: plugins.Scope(a.Scope), Risk: plugins.Risk(a.Risk),
			Doc: a.Doc, Default: a.Default, Aliases: a.Aliases, SecretRef: a.SecretRef,
		})
	}
	return d
}

func ingressToWire(in plugins.Ingress) *pluginpb.Ingress {
	w := &pluginpb.Ingress{Namespace: in.Namespace, Name: in.Name, Annotations: in.Annotations}
	if len(in.Secrets) > 0 {
		w.Secrets = make(map[string]*pluginpb.Secret, len(in.Secrets))
		for k, data := range in.Secrets {
			w.Secrets[k] = &pluginpb.Secret{Data: data}
		}
	}
	return w
}

func resultFromWire(w *pluginpb.Result) (plugins.Result, error) {
	r := plugins.Result{Namespace: w.Namespace, Name: w.Name}
	if len(w.Features) > 0 {
		if err := json.Unmarshal(w.Features, &r.Features); err != nil {
			return plugins.Result{}, fmt.Errorf("decode features of %s/%s: %w", w.Namespace, w.Name, err)
		}
	}
	for _, e := range w.Errors {
		r.Errors = append(r.Errors, plugins.Error{Key: e.Key, Message: e.Message, Warning: e.Warning})
	}
	return r, nil
}
