package applier

// OCSP stapling (enable-ocsp). ingress-nginx fetches OCSP responses from
// inside NGINX, in a timer its handshake code schedules; Switchyard fetches
// them here instead, because the applier is the stage that talks to the
// data plane and may use the network and the clock (the renderer is a pure
// function of the model, DESIGN.md). A response travels to Lua with the
// certificates (certificatesPayload), so a handshake only reads memory:
// nothing is ever fetched on the request path, and a certificate without a
// response is served without a staple, never with a failed handshake.
//
// Each certificate asks for stapling when the renderer marks it (ocsp) and
// its leaf names an OCSP responder and its PEM holds the issuer. A response
// is checked against the issuer (signature, serial number) and kept when it
// says good or revoked: a revoked certificate is stapled as revoked, which
// tells clients the truth the responder signed (ingress-nginx staples good
// responses only). It is fetched again halfway to its NextUpdate; a failed
// fetch is retried with backoff, and a response past its NextUpdate is
// dropped (Lua checks the expiry too).

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ocsp"

	"switchyard.dev/switchyard/bus"
)

const (
	// ocspFetchTimeout bounds one request to a responder.
	ocspFetchTimeout = 10 * time.Second
	// ocspMaxResponse bounds what is read of an answer: responses are a
	// few KiB.
	ocspMaxResponse = 64 << 10
	// ocspMinRefresh keeps a responder that answers with a very short
	// validity from being asked in a loop.
	ocspMinRefresh = time.Minute
	// ocspNoNextUpdate is how long a response without NextUpdate (the
	// responder always has newer information) is stapled.
	ocspNoNextUpdate = time.Hour
)

// ocspStaple is a response ready for Lua: the DER bytes and when they
// stop being stapled.
type ocspStaple struct {
	Response []byte
	Expires  time.Time
}

// ocspEntry is one certificate's stapling state.
type ocspEntry struct {
	pem          string // the PEM the entry was made for
	leaf, issuer *x509.Certificate
	responder    string
	staple       *ocspStaple
	status       int // of the staple, ocsp.Good or ocsp.Revoked
	due          time.Time
	backoff      *bus.Backoff
	fetching     bool
}

// stapler keeps an OCSP response for each certificate that asks for one.
type stapler struct {
	log    *zap.Logger
	client *http.Client
	// retryMin, retryMax bound the backoff after a failed fetch.
	retryMin, retryMax time.Duration

	mu      sync.Mutex
	entries map[string]*ocspEntry // by certificate id
	// wake tells the loop the entries changed; changed tells the applier
	// the staples did.
	wake, changed chan struct{}
}

func newStapler(log *zap.Logger, retryMin, retryMax time.Duration) *stapler {
	if retryMin <= 0 {
		retryMin = 10 * time.Second
	}
	if retryMax < retryMin {
		retryMax = max(retryMin, 10*time.Minute)
	}
	return &stapler{
		log:      log,
		client:   &http.Client{Timeout: ocspFetchTimeout},
		retryMin: retryMin, retryMax: retryMax,
		entries: map[string]*ocspEntry{},
		wake:    make(chan struct{}, 1), changed: make(chan struct{}, 1),
	}
}

// Changed receives after a staple was added, replaced or dropped.
func (s *stapler) Changed() <-chan struct{} { return s.changed }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// set makes the entries follow the desired certificates: a new or changed
// certificate that asks for stapling is fetched at once, one that no
// longer asks (or is gone) loses its staple.
func (s *stapler) set(certs map[string]luaCertificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	woke := false
	for id, e := range s.entries {
		if c, ok := certs[id]; !ok || !c.OCSP || c.PEM != e.pem {
			delete(s.entries, id)
		}
	}
	for id, c := range certs {
		if !c.OCSP || s.entries[id] != nil {
			continue
		}
		e, err := newOCSPEntry(c.PEM)
		if err != nil {
			// Said once per certificate change: set keeps no entry, and
			// is called again only when the certificates change.
			s.log.Warn("OCSP stapling skipped for a certificate", zap.String("certificate", id), zap.Error(err))
			continue
		}
		e.backoff = bus.NewBackoff(s.retryMin, s.retryMax)
		s.entries[id] = e
		woke = true
	}
	if woke {
		signal(s.wake)
	}
}

// newOCSPEntry reads the leaf, its issuer and responder from a PEM that
// also holds the private key, which is never looked at or quoted.
func newOCSPEntry(pemData string) (*ocspEntry, error) {
	var certs []*x509.Certificate
	rest := []byte(pemData)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d of the chain does not parse", len(certs)+1)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate in the PEM")
	}
	leaf := certs[0]
	if len(leaf.OCSPServer) == 0 {
		return nil, errors.New("the certificate names no OCSP responder")
	}
	responder := leaf.OCSPServer[0]
	if u, err := url.Parse(responder); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OCSP responder %q is not an http(s) URL", clip(responder))
	}
	var issuer *x509.Certificate
	for _, c := range certs[1:] {
		if leaf.CheckSignatureFrom(c) == nil {
			issuer = c
			break
		}
	}
	if issuer == nil {
		return nil, errors.New("the Secret's chain does not hold the certificate's issuer, which an OCSP request needs")
	}
	return &ocspEntry{pem: pemData, leaf: leaf, issuer: issuer, responder: responder}, nil
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// staples are the responses to staple now, by certificate id.
func (s *stapler) staples(now time.Time) map[string]ocspStaple {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]ocspStaple{}
	for id, e := range s.entries {
		if e.staple != nil && now.Before(e.staple.Expires) {
			out[id] = *e.staple
		}
	}
	return out
}

// run fetches what is due until ctx ends.
func (s *stapler) run(ctx context.Context) {
	for {
		wait := s.fetchDue(ctx)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// fetchDue fetches every entry that is due, one after the other, and
// returns how long until the next one is.
func (s *stapler) fetchDue(ctx context.Context) time.Duration {
	for {
		id, e := s.nextDue(time.Now())
		if e == nil {
			break
		}
		staple, status, err := s.fetch(ctx, e)
		if ctx.Err() != nil {
			return time.Hour
		}
		s.settle(id, e, staple, status, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := time.Hour
	now := time.Now()
	for _, e := range s.entries {
		next = min(next, max(e.due.Sub(now), 0))
	}
	return next
}

// nextDue picks one entry whose fetch is due, marking it as being fetched.
func (s *stapler) nextDue(now time.Time) (string, *ocspEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.entries {
		if !e.fetching && !now.Before(e.due) {
			e.fetching = true
			return id, e
		}
	}
	return "", nil
}

// settle records a fetch's outcome, unless the entry was replaced
// meanwhile.
func (s *stapler) settle(id string, e *ocspEntry, staple *ocspStaple, status int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.fetching = false
	if s.entries[id] != e {
		return
	}
	now := time.Now()
	if err != nil {
		e.due = now.Add(e.backoff.Next())
		s.log.Warn("OCSP response not fetched; the certificate is served with its last staple until it expires, then without one",
			zap.String("certificate", id), zap.String("responder", e.responder), zap.Time("retry", e.due), zap.Error(err))
		if e.staple != nil && !now.Before(e.staple.Expires) {
			e.staple = nil
			signal(s.changed)
		}
		return
	}
	e.backoff.Reset()
	e.due = refreshAt(staple, now)
	if e.staple == nil || !bytes.Equal(e.staple.Response, staple.Response) {
		e.staple, e.status = staple, status
		signal(s.changed)
	}
	s.log.Info("OCSP response fetched", zap.String("certificate", id), zap.String("status", statusName(status)),
		zap.Time("expires", staple.Expires), zap.Time("refresh", e.due))
}

// refreshAt is halfway between now and the response's expiry, and not
// sooner than ocspMinRefresh.
func refreshAt(staple *ocspStaple, now time.Time) time.Time {
	return now.Add(max(staple.Expires.Sub(now)/2, ocspMinRefresh))
}

func statusName(status int) string {
	switch status {
	case ocsp.Good:
		return "good"
	case ocsp.Revoked:
		return "revoked"
	}
	return "unknown"
}

// fetch asks the responder about the entry's certificate and checks the
// answer.
func (s *stapler) fetch(ctx context.Context, e *ocspEntry) (*ocspStaple, int, error) {
	req, err := ocsp.CreateRequest(e.leaf, e.issuer, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("build OCSP request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, ocspFetchTimeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.responder, bytes.NewReader(req))
	if err != nil {
		return nil, 0, fmt.Errorf("OCSP request: %w", err)
	}
	httpReq.Header.Set("Content-Type", "application/ocsp-request")
	httpReq.Header.Set("Accept", "application/ocsp-response")
	resp, err := s.client.Do(httpReq)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("responder answered %s", resp.Status)
	}
	der, err := io.ReadAll(io.LimitReader(resp.Body, ocspMaxResponse+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read OCSP response: %w", err)
	}
	if len(der) > ocspMaxResponse {
		return nil, 0, fmt.Errorf("OCSP response larger than %d bytes", ocspMaxResponse)
	}
	return checkOCSPResponse(der, e.leaf, e.issuer, time.Now())
}

// checkOCSPResponse verifies a response for leaf and says until when it
// may be stapled.
func checkOCSPResponse(der []byte, leaf, issuer *x509.Certificate, now time.Time) (*ocspStaple, int, error) {
	r, err := ocsp.ParseResponseForCert(der, leaf, issuer)
	if err != nil {
		return nil, 0, fmt.Errorf("OCSP response not valid for the certificate: %w", err)
	}
	if r.Status != ocsp.Good && r.Status != ocsp.Revoked {
		return nil, 0, fmt.Errorf("OCSP responder does not know the certificate (status %s)", statusName(r.Status))
	}
	if r.ThisUpdate.After(now.Add(5 * time.Minute)) {
		return nil, 0, fmt.Errorf("OCSP response is from the future (thisUpdate %s)", r.ThisUpdate.UTC().Format(time.RFC3339))
	}
	expires := r.NextUpdate
	if expires.IsZero() {
		expires = now.Add(ocspNoNextUpdate)
	}
	if !now.Before(expires) {
		return nil, 0, fmt.Errorf("OCSP response expired at %s", expires.UTC().Format(time.RFC3339))
	}
	return &ocspStaple{Response: der, Expires: expires}, r.Status, nil
}
