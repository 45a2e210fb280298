package renderer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// ZonesFile declares, at http level, the rate limit zones the servers'
// locations use, the auth cache and the keepalive upstreams of auth
// services. It follows the servers: nginx.conf includes http.d/*.conf, and
// the file exists only while some location needs one of them.
const ZonesFile = "http.d/zones.conf"

// zoneSize is the shared memory of each zone, as ingress-nginx: 5 MB hold
// about 80 thousand client addresses.
const zoneSize = "5m"

// zoneView is what zones.conf.tmpl sees of one Ingress's rate limit.
type zoneView struct {
	// ID prefixes the zone and variable names: letters, digits and "_".
	ID          string
	RPS, RPM    int
	Connections int
	Allowlist   []string
	Size        string
	// Ingress declares the zones; Source is its attribution comment.
	Ingress, Source string
	// AuthCache declares the auth cache (AuthCacheZone) instead.
	AuthCache bool
	// AuthUpstream declares a keepalive upstream of an auth service
	// instead.
	AuthUpstream *authUpstreamView
	// KeyVar is limit-conn-zone-variable, the variable the zones count by.
	KeyVar string
	// Key is the zones' key variable, resolved for the template with the
	// allowlist quoted (Allow) by resolve; ClientKey is the key of a
	// client not on the allowlist.
	Key, ClientKey string
	Allow          []string
}

// limitKeyVariable stands for limit-conn-zone-variable when the ConfigMap
// changes it: declared in nginx.conf (nginx.conf.tmpl), where a variable
// NGINX does not know is traced to the key, never to an Ingress.
const limitKeyVariable = "$switchyard_limit_key"

// zoneKey is the zones' key for limit-conn-zone-variable v: ingress-nginx's
// default as it is, another variable through limitKeyVariable.
func zoneKey(v string) (string, error) {
	switch {
	case v == bus.DefaultLimitConnZoneVariable:
		return v, nil
	case bus.LimitZoneVariablePattern.MatchString(v):
		return limitKeyVariable, nil
	}
	return "", fmt.Errorf("limit-conn-zone-variable: refusing %q", v)
}

// zoneKeyID is the zone name prefix of rate limit id counted by
// limit-conn-zone-variable v: id itself for the default, else id and a
// hash of v, so that a changed variable declares new zones (NGINX refuses
// to reload a zone whose key changed, and states counted by another key
// would mean nothing). "" (settings never parsed) is the default.
func zoneKeyID(id, v string) string {
	if id == "" || v == "" || v == bus.DefaultLimitConnZoneVariable {
		return id
	}
	h := sha256.Sum256([]byte(v))
	return id + "_" + hex.EncodeToString(h[:])[:8]
}

// resolve fills in what zones.conf.tmpl prints besides the counts: the
// key (a variable that is empty for allowlisted clients, when there is an
// allowlist) and the allowlist, quoted.
func (v *zoneView) resolve() error {
	if v.AuthCache || v.AuthUpstream != nil {
		return nil // no key: not a rate limit
	}
	var err error
	if v.ClientKey, err = zoneKey(v.KeyVar); err != nil {
		return err
	}
	v.Key = v.ClientKey
	if len(v.Allowlist) == 0 {
		return nil
	}
	v.Key = "$" + v.ID + "_key"
	for _, c := range v.Allowlist {
		q, err := quote(c)
		if err != nil {
			return err
		}
		v.Allow = append(v.Allow, q)
	}
	return nil
}

// rateLimitID names the zones of one Ingress's rate limit: the Ingress
// (sanitized, so the name is valid in nginx.conf, and cut short) and a hash
// of the Ingress and of everything the zone declarations hold. Two
// Ingresses never share zones; locations of one Ingress on several servers
// share them. A changed limit or allowlist gets new zones, so NGINX never
// sees a zone whose key variable changed across a reload (which it refuses)
// and two servers rendered from different generations never declare one
// zone twice.
func rateLimitID(ingress string, rl *bus.RateLimit) string {
	parts := []string{strconv.Itoa(rl.RPS), strconv.Itoa(rl.RPM), strconv.Itoa(rl.Connections)}
	return ingressID("rl_", ingress, append(parts, rl.Allowlist...)...)
}

// ingressID is a name valid in nginx.conf for something one Ingress
// declares at http level: prefix, the Ingress (sanitized and cut short)
// and a hash of the Ingress and parts.
func ingressID(prefix, ingress string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(ingress))
	for _, p := range parts {
		h.Write([]byte("\x00" + p))
	}
	var b strings.Builder
	b.WriteString(prefix)
	for _, c := range strings.ToLower(ingress) {
		if b.Len() >= len(prefix)+40 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(h.Sum(nil))[:12])
	return b.String()
}

// locationRateLimitID is the zone prefix of a location, or "" when it
// declares no zone (no limit, or limit-rate alone).
func locationRateLimitID(l bus.Location) string {
	if l.Features == nil || l.Features.RateLimit == nil || !l.Features.RateLimit.HasZones() {
		return ""
	}
	return rateLimitID(l.Ingress, l.Features.RateLimit)
}

// serverZones are the zones the locations of s use, by ID, global auth
// of settings included. The caller has validated the locations' features
// (renderServer did).
func serverZones(s *bus.Server, settings bus.Settings) map[string]zoneView {
	zones := map[string]zoneView{}
	for _, l := range s.Locations {
		authZones(l, settings, zones)
		id := zoneKeyID(locationRateLimitID(l), settings.LimitConnZoneVariable)
		if id == "" {
			continue
		}
		rl := l.Features.RateLimit
		zones[id] = zoneView{ID: id, RPS: rl.RPS, RPM: rl.RPM, Connections: rl.Connections, Allowlist: rl.Allowlist, Size: zoneSize,
			Ingress: l.Ingress, KeyVar: settings.LimitConnZoneVariable}
	}
	return zones
}

// zoneIndex counts which servers use which zones, so that a changed server
// updates zones.conf without looking at the other servers.
type zoneIndex struct {
	byServer map[string]map[string]zoneView // server key → its zones
	refs     map[string]int                 // zone ID → servers using it
	defs     map[string]zoneView
	changed  bool // the set of zone IDs changed since the file was rendered
}

func newZoneIndex() zoneIndex {
	return zoneIndex{byServer: map[string]map[string]zoneView{}, refs: map[string]int{}, defs: map[string]zoneView{}}
}

// set replaces the zones of one server (nil: it has none, or is gone).
func (z *zoneIndex) set(server string, zones map[string]zoneView) {
	for id := range z.byServer[server] {
		if z.refs[id]--; z.refs[id] == 0 {
			delete(z.refs, id)
			delete(z.defs, id)
			z.changed = true
		}
	}
	delete(z.byServer, server)
	if len(zones) == 0 {
		return
	}
	z.byServer[server] = zones
	for id, v := range zones {
		if z.refs[id] == 0 {
			z.defs[id] = v
			z.changed = true
		}
		z.refs[id]++
	}
}

// render gives zones.conf, or "" when no zone is in use.
func (z *zoneIndex) render(source func(zoneView) string) (string, error) {
	if len(z.defs) == 0 {
		return "", nil
	}
	views := make([]zoneView, 0, len(z.defs))
	for _, id := range slices.Sorted(maps.Keys(z.defs)) {
		v := z.defs[id]
		v.Source = source(v)
		if err := v.resolve(); err != nil {
			return "", err
		}
		views = append(views, v)
	}
	return execute("zones.conf.tmpl", views)
}

// flushZones renders zones.conf again when the set of zones changed.
func (r *Renderer) flushZones(out *bus.Output) error {
	if !r.zones.changed {
		return nil
	}
	r.zones.changed = false
	text, err := r.zones.render(zoneSource)
	if err != nil {
		return err
	}
	if text == "" {
		if r.files[ZonesFile] {
			delete(r.files, ZonesFile)
			out.Deletes = append(out.Deletes, fileKey(ZonesFile))
		}
		return nil
	}
	r.files[ZonesFile] = true
	putFile(out, ZonesFile, text)
	return nil
}

// burst is limit × multiplier, the requests NGINX lets through at once.
func burst(limit, multiplier int) int { return limit * multiplier }
