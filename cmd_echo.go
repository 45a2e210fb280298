package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// echoCommand serves a test backend that answers every request with what it
// received, so examples and tests can see how NGINX proxied a request.
func echoCommand(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9001", "address to listen on")
	id := echoIdentity{}
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

type echoIdentity struct {
	Namespace, Service, Pod string
}

type echoReply struct {
	Path      string              `json:"path"`
	Host      string              `json:"host"`
	Method    string              `json:"method"`
	Proto     string              `json:"proto"`
	Headers   map[string][]string `json:"headers"`
	Namespace string              `json:"namespace"`
	Service   string              `json:"service"`
	Pod       string              `json:"pod"`
}

func (id echoIdentity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(echoReply{
		Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto,
		Headers: r.Header, Namespace: id.Namespace, Service: id.Service, Pod: id.Pod,
	})
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}
