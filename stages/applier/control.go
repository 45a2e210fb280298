package applier

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// controlClient talks to the Lua configuration endpoint over its unix socket.
type controlClient struct {
	http *http.Client
}

func newControlClient(socket string) *controlClient {
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	return &controlClient{http: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "unix", socket)
			},
			MaxIdleConns: 2,
		},
	}}
}

// post sends a payload, retrying briefly: right after a start or reload a
// worker may not accept yet. The error never quotes the body (it may hold
// private keys), only NGINX's short answer.
func (c *controlClient) post(ctx context.Context, path string, body []byte) error {
	return c.postTo(ctx, path, body, "")
}

// postTo is post, but only a worker whose dicts have the sizes dicts
// ("<config bytes>,<certs bytes>", as nginx.conf declares them) counts:
// after a reload that resized them, an old worker may still answer, and
// what it stores goes to dicts the new workers do not see. Empty dicts
// takes any worker.
func (c *controlClient) postTo(ctx context.Context, path string, body []byte, dicts string) error {
	var last error
	attempts := 6
	if dicts != "" {
		attempts = 12 // old workers stop accepting within moments of a reload
	}
	for attempt, wait := 0, 25*time.Millisecond; attempt < attempts; attempt, wait = attempt+1, min(wait*2, 500*time.Millisecond) {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		var got string
		got, last = c.postOnce(ctx, path, body)
		if last == nil && dicts != "" && got != dicts {
			last = fmt.Errorf("POST %s: answered by a worker with dicts of %s bytes, want %s", path, got, dicts)
		}
		if last == nil {
			return nil
		}
	}
	return last
}

// postOnce sends the payload once and returns the answering worker's dict
// sizes.
func (c *controlClient) postOnce(ctx context.Context, path string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switchyard"+path, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
	}
	return resp.Header.Get("X-Switchyard-Dicts"), nil
}

// waitReady polls /healthz until the endpoint answers, NGINX exits, or the
// timeout passes.
func (c *controlClient) waitReady(ctx context.Context, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://switchyard/healthz", nil)
		resp, err := c.http.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("healthz: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("nginx exited during start-up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
