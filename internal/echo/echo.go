// Package echo is the backend `switchyard echo` serves: it answers every
// request with what it received, so examples and tests can see how NGINX
// proxied a request. Tests decode its answers as Reply.
package echo

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Identity is who the backend says it is.
type Identity struct {
	Namespace, Service, Pod string
}

// Reply is the JSON every request is answered with.
type Reply struct {
	Path      string              `json:"path"`
	Host      string              `json:"host"`
	Method    string              `json:"method"`
	Proto     string              `json:"proto"`
	Headers   map[string][]string `json:"headers"`
	Namespace string              `json:"namespace"`
	Service   string              `json:"service"`
	Pod       string              `json:"pod"`
	// BodyBytes is how many bytes of request body the backend read.
	BodyBytes int64 `json:"bodyBytes"`
}

// DelayHeader asks the backend to wait that long (a Go duration of at
// most MaxDelay) before it answers: a slow backend for timeout tests.
const DelayHeader = "X-Echo-Delay"

// MaxDelay bounds DelayHeader.
const MaxDelay = time.Minute

// StatusPathPrefix asks the backend to answer with a status: a path
// "/status/503" (any status from 200 to 599) gets the usual Reply with
// that status, a failing backend for error-page tests.
const StatusPathPrefix = "/status/"

// statusOf is the status a request asks for, 200 by default.
func statusOf(path string) int {
	rest, ok := strings.CutPrefix(path, StatusPathPrefix)
	if !ok || len(rest) < 3 {
		return http.StatusOK
	}
	code, err := strconv.Atoi(rest[:3])
	if err != nil || code < 200 || code > 599 {
		return http.StatusOK
	}
	return code
}

// ServeHTTP answers with the request as a Reply.
// The request body is read to its end (and counted), so a proxy sending a
// large upload sees it consumed rather than a connection closed early.
func (id Identity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	if d, err := time.ParseDuration(r.Header.Get(DelayHeader)); err == nil && d > 0 {
		select {
		case <-time.After(min(d, MaxDelay)):
		case <-r.Context().Done():
			return
		}
	}
	body, _ := json.Marshal(Reply{
		Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto,
		Headers: r.Header, Namespace: id.Namespace, Service: id.Service, Pod: id.Pod, BodyBytes: n,
	})
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(statusOf(r.URL.Path))
	_, _ = w.Write(body)
}
