package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// CallTimeout bounds one request to JetStream's API; a call that times
// out is retried (retry.go).
const CallTimeout = 10 * time.Second

// MaxPayload bounds one message. State is split by key so that no message
// comes close; a key whose state is larger is an error, never a silent cut.
const MaxPayload = 1 << 20

// Conn is a connection to the bus with JetStream.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// storage is where the streams this connection creates keep their
	// messages; see EnsureStream.
	storage jetstream.StorageType
	// replicas is how many servers of a cluster keep each stream it
	// creates (ReplicateStreams).
	replicas int
	health   *Health
	// instance names this process on the bus (SetInstance).
	instance string
	// fence, when set, says whether this connection may still publish its
	// stage's table (a lease it held may have run out, see RunWithLease).
	fence func() error
}

// SetInstance names the process every message of this connection's
// tables comes from (HeaderInstance): the pod, in split mode.
func (c *Conn) SetInstance(name string) { c.instance = name }

// Instance is the name SetInstance gave, or "".
func (c *Conn) Instance() string { return c.instance }

// checkFence is nil unless the connection must not publish.
func (c *Conn) checkFence() error {
	if c.fence == nil {
		return nil
	}
	return c.fence()
}

// ReplicateStreams makes the streams this connection creates or owns
// kept by n servers of a NATS cluster, on disk, so that losing the
// server that leads a stream loses neither the stream nor its messages
// (split mode: --nats-replicas). n = 1 keeps them in one server's memory.
func (c *Conn) ReplicateStreams(n int) {
	c.replicas = max(n, 1)
	if c.replicas > 1 {
		c.storage = jetstream.FileStorage
	}
}

// Ready says whether the connection is up and no call to the bus is
// failing, and if not, why.
func (c *Conn) Ready() (bool, error) {
	if !c.NC.IsConnected() {
		return false, errors.New("not connected to the bus")
	}
	return c.Health().Ready()
}

// Health reports whether this connection's calls to the bus succeed.
func (c *Conn) Health() *Health { return c.health }

// Connect dials an external NATS server; opts authenticate it
// (ClientOptions).
func Connect(url, name string, opts ...nats.Option) (*Conn, error) {
	// A server that is not up yet is waited for, as one that goes away
	// later is: a stage never exits because the bus is unavailable.
	health := newHealth()
	health.set("connection", fmt.Errorf("nats %s: not connected yet", url))
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { health.set("connection", nil) }),
		nats.ReconnectHandler(func(*nats.Conn) { health.set("connection", nil) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				err = errors.New("disconnected")
			}
			health.set("connection", fmt.Errorf("nats %s: %w", url, err))
		})}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", url, err)
	}
	// An external server's streams live in its memory, not ours.
	c, err := wrap(nc, jetstream.MemoryStorage)
	if err != nil {
		return nil, err
	}
	c.health = health
	if nc.IsConnected() {
		health.set("connection", nil)
	}
	return c, nil
}

func wrap(nc *nats.Conn, storage jetstream.StorageType) (*Conn, error) {
	// An ack that never comes fails its publish, which is then retried
	// (see Writer.Apply), rather than waiting forever.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Conn{NC: nc, JS: js, storage: storage, replicas: 1, health: newHealth()}, nil
}

// Close drains the connection.
func (c *Conn) Close() {
	if c != nil && c.NC != nil {
		_ = c.NC.Drain()
	}
}

// EnsureStream creates the stream holding one stage's state tables. Producer
// and consumers both call it with the same settings, so either may start
// first; an existing stream is used as its creator made it (a reader may
// not change the stream of the stage it reads). It retries until the bus
// answers; it fails only when ctx ends.
func (c *Conn) EnsureStream(ctx context.Context, stage string) (jetstream.Stream, error) {
	return retry(ctx, c, "ensure stream "+StreamName(stage), func(ctx context.Context) (jetstream.Stream, error) {
		return c.ensureStream(ctx, stage, false)
	})
}

// ensureOwnStream is EnsureStream for the stage that writes the table:
// it also sets an existing stream's settings back to this version's (the
// storage excepted, which cannot change), so a stream left full or
// misconfigured takes messages again.
func (c *Conn) ensureOwnStream(ctx context.Context, stage string) (jetstream.Stream, error) {
	return retry(ctx, c, "ensure stream "+StreamName(stage), func(ctx context.Context) (jetstream.Stream, error) {
		return c.ensureStream(ctx, stage, true)
	})
}

func (c *Conn) ensureStream(ctx context.Context, stage string, own bool) (jetstream.Stream, error) {
	// One attempt never outlasts CallTimeout, whatever ctx allows: a
	// cluster still electing its leaders answers nothing, and the caller
	// retries.
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cfg := jetstream.StreamConfig{
		Name:              StreamName(stage),
		Subjects:          []string{StageSubject(stage) + ".>"},
		MaxMsgsPerSubject: 1,
		MaxMsgSize:        MaxPayload,
		Storage:           c.storage,
		Replicas:          c.replicas,
		Discard:           jetstream.DiscardOld,
		// No RePublish for trace: the writers send its copies themselves
		// (traceCopy), because the server looks up each subject's last
		// message for a republish, which loads a whole old block from
		// disk per message written.
	}
	if existing, err := c.JS.Stream(ctx, cfg.Name); err == nil {
		if !own {
			return existing, nil
		}
		cfg.Storage = existing.CachedInfo().Config.Storage
		s, err := c.JS.UpdateStream(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
		return s, nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	s, err := c.JS.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		// Another stage created it meanwhile.
		s, err = c.JS.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// traceCopy sends the headers of a message published on subject, without
// its payload, to the subject's trace copy (TraceSubject), where
// `switchyard trace` reads them; the server drops the copy when nobody
// listens.
// Trace is a view, so a copy that cannot be sent is not an error of the
// publish.
func (c *Conn) traceCopy(subject string, h nats.Header) {
	_ = c.NC.PublishMsg(&nats.Msg{Subject: TraceSubject(subject), Header: h})
}

// PublishWithTrace publishes msg on its subject outside JetStream's
// publish acknowledgement (a stream still stores it when it holds the
// subject), and its headers to trace.
func (c *Conn) PublishWithTrace(msg *nats.Msg) error {
	if err := c.NC.PublishMsg(msg); err != nil {
		return err
	}
	c.traceCopy(msg.Subject, msg.Header)
	return nil
}

// Embedded is an in-process nats-server with JetStream.
type Embedded struct {
	Server *server.Server
	// internal authenticates this process's own connections when the
	// server requires authentication; nil when it does not.
	internal nkeys.KeyPair
}

// EmbeddedOptions configure the embedded server.
type EmbeddedOptions struct {
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// Listen, if set ("127.0.0.1:4222"), exposes the bus over TCP so that
	// `switchyard trace` or stages in other processes can reach it.
	Listen string
	// Keys are the public keys of the identities that may connect over
	// TCP (PublicKeys); required with Listen.
	Keys map[string]string
}

// StartEmbedded starts the server and waits until it accepts connections.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	sopts := &server.Options{
		ServerName: "switchyard",
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		MaxPayload: MaxPayload,
		NoSigs:     true,
		NoLog:      true,
		DontListen: opts.Listen == "",
	}
	var internal nkeys.KeyPair
	if opts.Listen != "" {
		if len(opts.Keys) == 0 {
			return nil, errors.New("embedded nats: refusing to listen without bus keys: anyone who could connect would read every table, Secrets included")
		}
		var err error
		if sopts.Nkeys, internal, err = embeddedUsers(opts.Keys); err != nil {
			return nil, err
		}
		host, port, err := net.SplitHostPort(opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("nats listen address %q: %w", opts.Listen, err)
		}
		sopts.Host = host
		if sopts.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("nats listen port %q: %w", port, err)
		}
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("embedded nats: not ready after 10s")
	}
	return &Embedded{Server: ns, internal: internal}, nil
}

// embeddedUsers are the identities' users, and one for this process's
// own in-process connections, with a key that never leaves memory and
// every permission (the process runs every stage it connects).
func embeddedUsers(keys map[string]string) ([]*server.NkeyUser, nkeys.KeyPair, error) {
	users, err := NkeyUsers(keys)
	if err != nil {
		return nil, nil, err
	}
	internal, err := nkeys.CreateUser()
	if err != nil {
		return nil, nil, fmt.Errorf("embedded nats: %w", err)
	}
	pub, err := internal.PublicKey()
	if err != nil {
		return nil, nil, fmt.Errorf("embedded nats: %w", err)
	}
	return append(users, &server.NkeyUser{Nkey: pub}), internal, nil
}

// The in-process connection's handshake timeout and attempts (Connect).
const (
	inProcessConnectTimeout  = 20 * time.Second
	inProcessConnectAttempts = 5
)

// Connect opens an in-process connection: no TCP, no listener needed.
func (e *Embedded) Connect(name string) (*Conn, error) {
	opts := []nats.Option{nats.InProcessServer(e.Server), nats.Name(name)}
	if e.internal != nil {
		pub, err := e.internal.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("in-process nats connection: %w", err)
		}
		opts = append(opts, nats.Nkey(pub, e.internal.Sign))
	}
	// The handshake runs over a pipe, but still needs this process's
	// goroutines to be scheduled: on a loaded machine NATS's default 2 s
	// connect timeout has run out before it. A slow start is no reason to
	// exit, so wait longer, and try again.
	opts = append(opts, nats.Timeout(inProcessConnectTimeout))
	var nc *nats.Conn
	var err error
	for attempt := 1; ; attempt++ {
		if nc, err = nats.Connect("", opts...); err == nil {
			break
		}
		if attempt == inProcessConnectAttempts {
			return nil, fmt.Errorf("in-process nats connection (%d attempts): %w", attempt, err)
		}
		time.Sleep(time.Duration(attempt) * time.Second)
	}
	// The embedded server's streams would otherwise hold every stage's
	// table in this process's heap, a copy of each message with its
	// headers: at 10,000 Ingresses the largest single use of memory. On
	// disk (under --state-dir, emptied at start) they cost a page cache
	// the kernel can reclaim, and JetStream keeps recent blocks cached.
	return wrap(nc, jetstream.FileStorage)
}

// ClientURL is the TCP URL when the server listens, or "".
func (e *Embedded) ClientURL() string {
	if e.Server.Addr() == nil {
		return ""
	}
	return e.Server.ClientURL()
}

// Shutdown stops the server.
func (e *Embedded) Shutdown() {
	e.Server.Shutdown()
	e.Server.WaitForShutdown()
}

// SubscribeAll delivers every message on subject to the returned channel,
// in order, until ctx ends or the subscription ends. Unlike ChanSubscribe
// it drops none when the reader falls behind (the client's "slow
// consumer"): the client queues them, up to its pending limits, while the
// channel is full. Apply results come in bursts at start-up.
func (c *Conn) SubscribeAll(ctx context.Context, subject string) (<-chan *nats.Msg, *nats.Subscription, error) {
	out := make(chan *nats.Msg, 64)
	sub, err := c.NC.Subscribe(subject, func(m *nats.Msg) {
		select {
		case out <- m:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return out, sub, nil
}
