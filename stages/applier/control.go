package applier

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// errStale is the Lua endpoint's answer to a backends delta made against
// another version than the one it stores (412): the data plane's state is
// not what the applier believes, so everything must be sent.
var errStale = errors.New("stale delta")

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
func (c *controlClient) post(ctx context.Context, path string, body []byte) (uint64, error) {
	return c.postTo(ctx, path, body, "")
}

// postTo is post, but only a worker whose dicts have the sizes dicts
// ("<config bytes>,<certs bytes>", as nginx.conf declares them) counts:
// after a reload that resized them, an old worker may still answer, and
// what it stores goes to dicts the new workers do not see. Empty dicts
// takes any worker. It returns the stored backends version the endpoint
// answered (X-Switchyard-Backends-Version), zero for other payloads. A
// stale delta is not retried: the same body would be refused again.
func (c *controlClient) postTo(ctx context.Context, path string, body []byte, dicts string) (uint64, error) {
	var last error
	attempts := 6
	if dicts != "" {
		attempts = 12 // old workers stop accepting within moments of a reload
	}
	for attempt, wait := 0, 25*time.Millisecond; attempt < attempts; attempt, wait = attempt+1, min(wait*2, 500*time.Millisecond) {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(wait):
			}
		}
		var got string
		var version uint64
		got, version, last = c.postOnce(ctx, path, body)
		if last == nil && dicts != "" && got != dicts {
			last = fmt.Errorf("POST %s: answered by a worker with dicts of %s bytes, want %s", path, got, dicts)
		}
		if last == nil {
			return version, nil
		}
		if errors.Is(last, errStale) {
			return 0, last
		}
	}
	return 0, last
}

// postOnce sends the payload once and returns the answering worker's dict
// sizes and the backends version it stored.
func (c *controlClient) postOnce(ctx context.Context, path string, body []byte) (string, uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switchyard"+path, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusPreconditionFailed {
		return "", 0, fmt.Errorf("POST %s: %w: %s", path, errStale, bytes.TrimSpace(answer))
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
	}
	version, _ := strconv.ParseUint(cmp.Or(resp.Header.Get("X-Switchyard-Backends-Version"), resp.Header.Get("X-Switchyard-Routes-Version")), 10, 64)
	return resp.Header.Get("X-Switchyard-Dicts"), version, nil
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
