package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"switchyard.dev/switchyard/internal/echo"
)

// echoCommand serves a test backend that answers every request with what it
// received, so examples and tests can see how NGINX proxied a request.
func echoCommand(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9001", "address to listen on")
	id := echo.Identity{}
	fs.StringVar(&id.Service, "service", "echo", "service name to report")
	fs.StringVar(&id.Pod, "pod", "", "pod name to report (default: hostname)")
	fs.StringVar(&id.Namespace, "namespace", "default", "namespace to report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if id.Pod == "" {
		id.Pod, _ = os.Hostname()
	}
	srv := &http.Server{Addr: *listen, Handler: id, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
