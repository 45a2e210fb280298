// Package echo is the backend `switchyard echo` serves: it answers every
// request with what it received, so examples and tests can see how NGINX
// proxied a request. Tests decode its answers as Reply.
package echo

import (
	"encoding/json"
	"net/http"
	"strconv"
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
}

// ServeHTTP answers with the request as a Reply.
func (id Identity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(Reply{
		Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto,
		Headers: r.Header, Namespace: id.Namespace, Service: id.Service, Pod: id.Pod,
	})
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}
