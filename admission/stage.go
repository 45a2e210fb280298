// Package admission is the validating admission webhook: it tells the API
// server, before an Ingress is stored, what run would make of it.
//
// It is not one of the pipeline's stages: it publishes nothing, and to
// judge an Ingress the way the pipeline would it embeds the translator's
// and the annotations stage's cores (as `switchyard check` and `render`
// run them), fed from the watcher's table on the bus. Stages never import
// it; it lives beside them for that reason.
package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/annotations"
	"switchyard.dev/switchyard/stages/translator"
)

// Path is where the webhook answers, as ingress-nginx's does.
const Path = "/networking/v1/ingresses"

// Config configures the webhook.
type Config struct {
	// Addr is --validating-webhook, e.g. :8443.
	Addr string
	// CertFile and KeyFile are the serving certificate; they are read again
	// when they change on disk (a rotated Secret).
	CertFile, KeyFile string
	Translator        translator.Config
	Annotations       annotations.Config
	// ReviewTimeout bounds one review (the API server's own default is 10 s).
	ReviewTimeout time.Duration
}

// Webhook serves the admission webhook next to a mirror of the translator and the
// annotation plugins, kept current from the watcher's table on the bus.
type Webhook struct {
	conn *bus.Conn
	cfg  Config
	log  *zap.Logger
}

// New returns the webhook.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Webhook {
	if cfg.ReviewTimeout == 0 {
		cfg.ReviewTimeout = 8 * time.Second
	}
	if cfg.Annotations.Prefix == "" {
		cfg.Annotations.Prefix = bus.DefaultAnnotationsPrefix
	}
	return &Webhook{conn: conn, cfg: cfg, log: log}
}

// Run serves until ctx ends.
func (s *Webhook) Run(ctx context.Context) error {
	certs, err := newCertReloader(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return err
	}
	sources, err := s.cfg.Annotations.Sources()
	if err != nil {
		return err
	}
	host := annotations.NewHost(annotations.HostConfig{Sources: sources, Prefix: s.cfg.Annotations.Prefix,
		CallTimeout: s.cfg.Annotations.CallTimeout, SSLPassthrough: s.cfg.Annotations.SSLPassthrough}, s.log.Named("plugins"))
	owners := host.Start(ctx)
	defer host.Wait()
	j := newJudge(s.cfg.Translator, func() *annotations.Annotator { return host.NewAnnotator(owners) })

	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("--validating-webhook %s: %w", s.cfg.Addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, http.TimeoutHandler(&handler{judge: j, log: func(msg string, err error) {
		s.log.Warn(msg, zap.Error(err))
	}}, s.cfg.ReviewTimeout, "review timed out"))
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.ReviewTimeout + 5*time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	s.log.Info("validating webhook listening", zap.String("addr", l.Addr().String()), zap.String("path", Path))

	followed := make(chan error, 1)
	go func() { followed <- s.follow(ctx, j) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	case err = <-followed:
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// follow keeps the judge current. After a review it could not take back,
// it follows again from the whole table.
func (s *Webhook) follow(ctx context.Context, j *judge) error {
	for ctx.Err() == nil {
		j.reset()
		followCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- bus.Follow(followCtx, s.conn, bus.StageWatcher, func(ctx context.Context, snap bus.Snapshot) error {
				if err := j.sync(ctx, snap); err != nil {
					s.log.Warn("webhook mirror not updated; it starts over", zap.Error(err))
				}
				return nil
			})
		}()
		var err error
		select {
		case err = <-done:
		case <-j.rebuild:
			cancel()
			err = <-done
		}
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
