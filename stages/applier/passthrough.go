package applier

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// TLS passthrough endpoints (--enable-ssl-passthrough): one file per
// passthrough host in Local.PassthroughDir, named by the host and holding
// its endpoints one a line, which templates/passthrough.js reads on each
// connection. Writing them is the whole change: NGINX is not reloaded.

// passthroughFiles keeps the endpoints directory equal to the desired
// hosts, writing only the files that changed.
type passthroughFiles struct {
	dir string // "" without passthrough
	// written is what the directory holds, by host; nil when unknown (at
	// start, after a failure), which makes the next sync read the
	// directory and write every file.
	written map[string]string
}

// passthroughContent is a host's file: its endpoints, one a line.
func passthroughContent(eps []string) string {
	if len(eps) == 0 {
		return ""
	}
	return strings.Join(eps, "\n") + "\n"
}

// decodePassthrough reads a renderer value for host and checks it as the
// script will read it: a file name that is a host name, lines that are
// endpoints.
func decodePassthrough(host string, data []byte) (string, error) {
	var v bus.PassthroughEndpoints
	if err := json.Unmarshal(data, &v); err != nil {
		return "", fmt.Errorf("decode passthrough endpoints of %q: %w", host, err)
	}
	if v.Host != host || !bus.ValidPassthroughHost(host) {
		return "", fmt.Errorf("passthrough endpoints: %q is not a host name that may be passed through", host)
	}
	for _, ep := range v.Endpoints {
		if !bus.PassthroughEndpointPattern.MatchString(ep) {
			return "", fmt.Errorf("passthrough endpoints of %s: %q is not ip:port", host, ep)
		}
	}
	return passthroughContent(v.Endpoints), nil
}

// sync brings the directory to hosts (host → file content) and says
// whether a file changed. A file is replaced atomically (a temporary file
// renamed over it), so a connection reads the old endpoints or the new
// ones, never half of them. A host name that could not be a file of this
// directory is refused, the other hosts are still written.
func (p *passthroughFiles) sync(hosts map[string]string) (bool, error) {
	if p.dir == "" {
		if len(hosts) > 0 {
			return false, fmt.Errorf("passthrough endpoints for %d hosts, but this applier runs without --enable-ssl-passthrough", len(hosts))
		}
		return false, nil
	}
	if p.written == nil {
		if err := p.reset(); err != nil {
			return false, err
		}
	}
	changed := false
	var errs []error
	for host, content := range hosts {
		if old, ok := p.written[host]; ok && old == content {
			continue
		}
		if err := p.write(host, content); err != nil {
			errs = append(errs, err)
			continue
		}
		p.written[host], changed = content, true
	}
	for host := range p.written {
		if _, ok := hosts[host]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(p.dir, host)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("remove passthrough endpoints of %s: %w", host, err))
			continue
		}
		delete(p.written, host)
		changed = true
	}
	return changed, errors.Join(errs...)
}

// reset makes the directory (readable by the workers, which may run as
// another user) and empties it of everything: what an earlier run left is
// not known to be current.
func (p *passthroughFiles) reset() error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("passthrough endpoints directory: %w", err)
	}
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return fmt.Errorf("passthrough endpoints directory: %w", err)
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("passthrough endpoints directory: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(p.dir, e.Name())); err != nil {
			return fmt.Errorf("passthrough endpoints directory: %w", err)
		}
	}
	p.written = map[string]string{}
	return nil
}

// write replaces host's file with content.
func (p *passthroughFiles) write(host, content string) error {
	if !bus.ValidPassthroughHost(host) {
		return fmt.Errorf("passthrough endpoints: refusing host %q as a file name", host)
	}
	// A leading dot: never a host name, so the script never reads it.
	tmp, err := os.CreateTemp(p.dir, "."+host+".*")
	if err != nil {
		return fmt.Errorf("write passthrough endpoints of %s: %w", host, err)
	}
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(p.dir, host))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write passthrough endpoints of %s: %w", host, err)
	}
	return nil
}

// syncPassthrough writes the passthrough hosts' endpoint files; with keep
// (a reload is coming) the hosts the running stream file still passes
// through keep theirs (keptRoutes).
func (s *Stage) syncPassthrough(hosts map[string]string, keep bool, res *bus.ApplyResult, errs *[]error) {
	if keep && s.passthrough.written != nil {
		hosts = keptRoutes(hosts, s.passthrough.written)
	}
	changed, err := s.passthrough.sync(hosts)
	if err != nil {
		*errs = append(*errs, err)
	}
	if changed {
		res.DynamicUpdated = true
	}
}
