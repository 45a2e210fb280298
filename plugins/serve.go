package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"switchyard.dev/switchyard/plugins/pluginpb"
)

// ProtocolVersion is the version of the wire protocol this SDK speaks
// (pluginpb/annotations.proto and the go-plugin handshake).
const ProtocolVersion = pluginpb.ProtocolVersion

// Option changes how Serve runs.
type Option func(*serveConfig)

type serveConfig struct {
	logger hclog.Logger
}

// WithLogger sets the logger of go-plugin's side of the process; what it
// writes to stderr reaches the host's log. By default only warnings and
// errors are written.
func WithLogger(l hclog.Logger) Option {
	return func(c *serveConfig) { c.logger = l }
}

// ErrNotStartedByHost is returned by Serve when the program was not started
// by a Switchyard host (someone ran the plugin binary by hand).
var ErrNotStartedByHost = errors.New("this program is a Switchyard annotation plugin: put it in the directory given to " +
	"`switchyard run --plugin-dir`; it is not meant to be run by hand")

// Serve runs p as a plugin process until the host stops it, and returns
// nil then. It returns an error at once if p is nil or the program was
// not started by a host. Call it from main.
func Serve(p Plugin, opts ...Option) error {
	if p == nil {
		return errors.New("plugins.Serve: nil Plugin")
	}
	return serve(&server{impl: p}, opts)
}

// ServeSet runs several plugins in one process, each call going to the
// plugin its metadata names (pluginpb.PluginMetadataKey): one Go runtime's
// memory instead of one per plugin, at the cost of their isolation (a
// plugin that crashes the process takes the others with it until the host
// restarts it). Switchyard's built-ins run so; a host sees each plugin as
// its own, with a name of its own.
func ServeSet(set map[string]Plugin, opts ...Option) error {
	if len(set) == 0 {
		return errors.New("plugins.ServeSet: no Plugin")
	}
	for name, p := range set {
		if p == nil {
			return fmt.Errorf("plugins.ServeSet: nil Plugin %q", name)
		}
	}
	return serve(&server{set: set}, opts)
}

func serve(s *server, opts []Option) error {
	if os.Getenv(pluginpb.MagicCookieKey) != pluginpb.MagicCookieValue {
		return ErrNotStartedByHost
	}
	cfg := serveConfig{logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})}
	for _, o := range opts {
		o(&cfg)
	}
	host, _ := strconv.Atoi(os.Getenv(pluginpb.HostPIDEnv))
	go exitWithParent(os.Getppid(), host, time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  pluginpb.ProtocolVersion,
			MagicCookieKey:   pluginpb.MagicCookieKey,
			MagicCookieValue: pluginpb.MagicCookieValue,
		},
		VersionedPlugins: map[int]plugin.PluginSet{
			pluginpb.ProtocolVersion: {pluginpb.ServiceName: &grpcServer{server: s}},
		},
		GRPCServer: plugin.DefaultGRPCServer,
		Logger:     cfg.logger,
	})
	return nil
}

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

// grpcServer binds a Plugin to go-plugin's gRPC transport in the plugin
// process. The host's side is internal/pluginhost.
type grpcServer struct {
	plugin.NetRPCUnsupportedPlugin
	server *server
}

func (g *grpcServer) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterAnnotationsServer(s, g.server)
	return nil
}

func (g *grpcServer) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("a plugin process dials no plugin")
}

// server answers the host's calls in the plugin process: to impl, or, in
// a process of several plugins, to the one of set the call names.
type server struct {
	pluginpb.UnimplementedAnnotationsServer
	impl Plugin
	set  map[string]Plugin
}

// plugin is the plugin a call is for.
func (s *server) plugin(ctx context.Context) (Plugin, error) {
	if s.set == nil {
		return s.impl, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	names := md.Get(pluginpb.PluginMetadataKey)
	if len(names) != 1 {
		return nil, status.Errorf(codes.InvalidArgument, "this process serves several plugins: name one in %s", pluginpb.PluginMetadataKey)
	}
	p, ok := s.set[names[0]]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no plugin %q in this process", names[0])
	}
	return p, nil
}

func (s *server) Describe(ctx context.Context, _ *pluginpb.DescribeRequest) (*pluginpb.Description, error) {
	p, err := s.plugin(ctx)
	if err != nil {
		return nil, err
	}
	return descriptionToWire(p.Describe()), nil
}

func (s *server) Apply(ctx context.Context, req *pluginpb.ApplyRequest) (resp *pluginpb.ApplyResponse, err error) {
	p, err := s.plugin(ctx)
	if err != nil {
		return nil, err
	}
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
	results, err := p.Apply(ctx, batch)
	if err != nil {
		// The host fails the batch's Ingresses closed, as for a panic.
		return nil, fmt.Errorf("plugin failed: %w", err)
	}
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

func ingressFromWire(w *pluginpb.Ingress) Ingress {
	// The request is this call's alone: its map is handed over, not copied
	// (10,000 copies in a start's batch).
	in := Ingress{Namespace: w.Namespace, Name: w.Name, Annotations: w.Annotations}
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
