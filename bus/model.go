package bus

// The model is what the translator derives from Kubernetes objects and what
// the annotations stage enriches: servers with their locations, backends with
// their endpoints, certificates, and per-Ingress information. Each piece is
// published under its own key, so a change to one Service's endpoints is one
// small message, not a cluster-wide blob.

import (
	"cmp"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// DefaultServerName is the hostname of the catch-all server.
const DefaultServerName = "_"

// DefaultBackendName is the backend of --default-backend-service, as
// ingress-nginx names it: the translator publishes it, the renderer sends
// custom error pages and unmatched requests to it.
const DefaultBackendName = "upstream-default-backend"

// CustomDefaultBackendPrefix starts the name of the backend of an
// Ingress's default-backend annotation: "custom-default-backend-<namespace>-
// <service>", as ingress-nginx names it.
const CustomDefaultBackendPrefix = "custom-default-backend-"

// CustomDefaultBackendName is the backend of a default-backend annotation
// naming service, on an Ingress of namespace.
func CustomDefaultBackendName(namespace, service string) string {
	return CustomDefaultBackendPrefix + namespace + "-" + service
}

// DefaultAnnotationsPrefix is ingress-nginx's annotation prefix, the
// default of --annotations-prefix.
const DefaultAnnotationsPrefix = "nginx.ingress.kubernetes.io"

// Path types after defaulting: ImplementationSpecific is rendered as Prefix
// unless a regex annotation says otherwise, as ingress-nginx does.
const (
	PathExact  = "Exact"
	PathPrefix = "Prefix"
)

// Server is one virtual host.
type Server struct {
	Hostname string `json:"hostname"`
	// TLS is set when an Ingress lists this host under spec.tls.
	TLS       *ServerTLS `json:"tls,omitempty"`
	Locations []Location `json:"locations"`
	// Aliases, SSLCiphers and SSLPreferServerCiphers are the server
	// features (server-alias, ssl-ciphers, ssl-prefer-server-ciphers) of
	// the oldest Ingress of the host that sets each (CompareIngressAge);
	// the annotations stage fills them in.
	Aliases                []string `json:"aliases,omitempty"`
	SSLCiphers             string   `json:"sslCiphers,omitempty"`
	SSLPreferServerCiphers *bool    `json:"sslPreferServerCiphers,omitempty"`
	// ServerFeaturesFrom is the Ingress ("namespace/name") that set
	// SSLCiphers, so a cipher list NGINX refuses is traced to it.
	ServerFeaturesFrom string `json:"serverFeaturesFrom,omitempty"`
	// ClientAuth is the host's mutual TLS (auth-tls-*) of the oldest
	// Ingress of the host that asks for it, which
	// ClientAuthFrom names; the annotations stage fills them in.
	ClientAuth     *ClientAuth `json:"clientAuth,omitempty"`
	ClientAuthFrom string      `json:"clientAuthFrom,omitempty"`
	// SSLPassthrough (ssl-passthrough, with --enable-ssl-passthrough):
	// TLS connections whose SNI name is this host go unterminated to
	// PassthroughBackend, the backend of the host's "/" path, as in
	// ingress-nginx. PassthroughFrom is the oldest Ingress of the host that
	// asks for it. The annotations stage fills them in.
	SSLPassthrough     bool   `json:"sslPassthrough,omitempty"`
	PassthroughBackend string `json:"passthroughBackend,omitempty"`
	PassthroughFrom    string `json:"passthroughFrom,omitempty"`
}

// ServerTLS names the certificate served for a host.
type ServerTLS struct {
	// Certificate is the key of a Certificate ("namespace/name"); empty means
	// the default certificate (the Secret was missing or invalid).
	Certificate string `json:"certificate,omitempty"`
}

// Location is one path on a server.
type Location struct {
	Path     string `json:"path"`
	PathType string `json:"pathType"`
	// Backend is the backend's name; empty means the built-in default
	// backend, which answers 404.
	Backend string `json:"backend,omitempty"`
	// Ingress is the Ingress that owns this path, "namespace/name".
	Ingress string `json:"ingress,omitempty"`
	// Service and ServicePort name the Ingress backend's Service and port
	// (name or number, as the Ingress says): the per-request metrics'
	// service label and $service_name, as ingress-nginx sets them.
	Service     string `json:"service,omitempty"`
	ServicePort string `json:"servicePort,omitempty"`
	// Features are filled in by the annotations stage.
	Features *Features `json:"features,omitempty"`
	// Canary is the canary Ingress attached to this location, if any.
	Canary *LocationCanary `json:"canary,omitempty"`
}

// LocationCanary is a canary Ingress (annotation canary: "true") serving
// the same host, path and path type as the location's Ingress. Its policy
// comes from its annotations, through the canary plugin.
type LocationCanary struct {
	Ingress string `json:"ingress"` // "namespace/name"
	Backend string `json:"backend"`
}

// Backend is a Service port and its ready endpoints. It is also the payload
// the Lua balancer reads, so its JSON follows ingress-nginx's Backend shape.
type Backend struct {
	Name    string     `json:"name"`
	Service ServiceRef `json:"service"`
	// Endpoints are the ready endpoints; an empty list makes NGINX answer 503.
	Endpoints   []Endpoint `json:"endpoints"`
	LoadBalance string     `json:"load-balance,omitempty"`
	// Balancing settings (backend_balancing.go): consistent hashing and
	// cookie affinity, which win over LoadBalance as in ingress-nginx.
	UpstreamHashByConfig  *UpstreamHashByConfig  `json:"upstreamHashByConfig,omitempty"`
	SessionAffinityConfig *SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"`
	// ExternalName and ExternalPort are set for a Service of type
	// ExternalName: NGINX resolves the name when it proxies.
	ExternalName string `json:"externalName,omitempty"`
	ExternalPort int32  `json:"externalPort,omitempty"`
	// AlternativeBackends and TrafficShapingPolicy are ingress-nginx's
	// canary fields, set by the annotations stage: a primary backend lists
	// its canary's backend, and the canary backend carries the policy the
	// Lua balancer applies.
	AlternativeBackends  []string              `json:"alternativeBackends,omitempty"`
	TrafficShapingPolicy *TrafficShapingPolicy `json:"trafficShapingPolicy,omitempty"`
	// CanaryPolicies are the policies of every canary Ingress that uses
	// this backend as its canary, by canary Ingress ("namespace/name").
	// A location names its canary backend and canary Ingress to the Lua
	// balancer (LocationCanary), which takes the policy from here: each
	// canary Ingress works on the host and path it was declared for and
	// nowhere else, even when canaries or primaries share a Service
	// (unlike ingress-nginx, kubernetes/ingress-nginx#4667, #9458, #5848).
	CanaryPolicies map[string]*TrafficShapingPolicy `json:"canaryPolicies,omitempty"`
}

// ServiceRef names the Service port a backend comes from.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      string `json:"port"`
}

// Endpoint is one address the balancer may pick. Port is a string, as in
// ingress-nginx's JSON.
type Endpoint struct {
	Address string `json:"address"`
	Port    string `json:"port"`
}

// Certificate is a TLS key pair from a kubernetes.io/tls Secret, already
// checked to parse and to match.
type Certificate struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// PEM holds the certificate chain followed by the private key. It is
	// secret: never log it.
	PEM string `json:"pem"`
	// Default marks --default-ssl-certificate: served for a name no
	// certificate covers and to clients that send no name.
	Default bool `json:"default,omitempty"`
}

// CompareIngressAge orders two Ingresses (creation time in Unix seconds,
// "namespace/name") as ingress-nginx does (its store's sortIngressSlice):
// oldest first. Creation times have whole seconds, and Ingresses applied
// together (a Helm release, kubectl apply -f DIR) often share one: then
// the namespace/name that sorts last counts as the older. Following that
// order, a cluster that moves over keeps each contested setting where
// ingress-nginx put it.
func CompareIngressAge(aCreated int64, aKey string, bCreated int64, bKey string) int {
	if c := cmp.Compare(aCreated, bCreated); c != 0 {
		return c
	}
	return strings.Compare(bKey, aKey)
}

// IngressInfo is what the translator learned about one Ingress it serves:
// its annotations for the plugins, and the problems found in it.
type IngressInfo struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation,omitempty"`
	// Created is the Ingress's creationTimestamp in Unix seconds (0 when
	// it has none). Where Ingresses ask different things of what they
	// share (a path, a host's server-level annotations, a backend's
	// balancing or canary policy) the older one's wins, in
	// ingress-nginx's order (CompareIngressAge).
	Created     int64             `json:"created,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Canary is set when the Ingress is a canary (<prefix>/canary is true):
	// the translator decides it once, and the annotations stage keeps only
	// the canary and balancing annotations of such an Ingress.
	Canary bool `json:"canary,omitempty"`
	// CustomHeaders are the response headers of the ConfigMap the
	// custom-headers annotation names, read and checked by the translator;
	// the annotations stage adds them to the Ingress's locations.
	CustomHeaders []Header `json:"customHeaders,omitempty"`
	// FastCGIParams are the data of the ConfigMap fastcgi-params-configmap
	// names, read and checked by the translator; the annotations stage
	// gives them to the Ingress's FCGI locations.
	FastCGIParams []Header `json:"fastcgiParams,omitempty"`
	// AuthProxySetHeaders are the data of the ConfigMap
	// auth-proxy-set-headers names, read and checked by the translator;
	// the annotations stage gives them to the Ingress's external auth.
	// AuthProxySetHeadersUnusable, when set, is why that ConfigMap cannot
	// be used: the locations with external auth are then denied (503).
	AuthProxySetHeaders         []Header `json:"authProxySetHeaders,omitempty"`
	AuthProxySetHeadersUnusable string   `json:"authProxySetHeadersUnusable,omitempty"`
	// Rejected is set when the Ingress is not served at all.
	Rejected bool      `json:"rejected,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is a user error in one object's field, said so a person can act
// on it. Problems become log lines, status conditions and Kubernetes Events.
type Problem struct {
	Field   string `json:"field"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// RenderedFile is one NGINX configuration file the applier writes below its
// configuration directory. Content is the file's bytes: a binary file
// (the TLS session ticket key) travels as base64, since a JSON string
// holds UTF-8 text only (MarshalJSON).
type RenderedFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Parts, when set, says the file was too large for one message:
	// Content is empty and the file is the FileParts 0…Parts-1 joined.
	Parts int `json:"parts,omitempty"`
}

// renderedFileJSON is RenderedFile on the bus: Content is either text or,
// for bytes that are not UTF-8, ContentBase64.
type renderedFileJSON struct {
	Path          string `json:"path"`
	Content       string `json:"content"`
	ContentBase64 []byte `json:"contentBase64,omitempty"`
	Parts         int    `json:"parts,omitempty"`
}

// MarshalJSON writes Content as base64 when it is not UTF-8, which
// encoding/json would otherwise replace with U+FFFD.
func (f RenderedFile) MarshalJSON() ([]byte, error) {
	w := renderedFileJSON{Path: f.Path, Content: f.Content, Parts: f.Parts}
	if !utf8.ValidString(f.Content) {
		w.Content, w.ContentBase64 = "", []byte(f.Content)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads either form MarshalJSON writes.
func (f *RenderedFile) UnmarshalJSON(data []byte) error {
	var w renderedFileJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*f = RenderedFile{Path: w.Path, Content: w.Content, Parts: w.Parts}
	if w.ContentBase64 != nil {
		f.Content = string(w.ContentBase64)
	}
	return nil
}

// ApplyResult is the applier's outcome for one generation.
type ApplyResult struct {
	Generation uint64 `json:"generation"`
	// Instance is the applier that reports it (its pod), as
	// HeaderInstance says: with several appliers, the one that failed.
	Instance string `json:"instance,omitempty"`
	// Reloaded says whether NGINX reloaded; endpoint and certificate changes
	// never reload.
	Reloaded bool `json:"reloaded"`
	// DynamicUpdated says whether the Lua endpoint received new data.
	DynamicUpdated bool `json:"dynamicUpdated"`
	// ReloadPending says the static part waits for the next reload slot:
	// the generation is not fully applied yet.
	ReloadPending bool   `json:"reloadPending,omitempty"`
	Error         string `json:"error,omitempty"`
	// ConfigHash identifies the configuration files NGINX runs after this
	// apply (nginx_ingress_controller_config_hash); 0 before NGINX runs.
	ConfigHash uint64 `json:"configHash,omitempty"`
	// BackendsPost says how the backends went to the Lua endpoint, when
	// they did: "full" (all of them) or "delta" (only what changed).
	BackendsPost string `json:"backendsPost,omitempty"`
	// BackendsBytes is what that took, a delta refused as stale included.
	BackendsBytes int `json:"backendsBytes,omitempty"`
}

// Outcome is how the result reads in one word, for HeaderResult: ok,
// pending (the reload waits for its slot) or failed.
func (r ApplyResult) Outcome() string {
	switch {
	case r.Error != "":
		return "failed"
	case r.ReloadPending:
		return "pending"
	}
	return "ok"
}

// Model is the whole model: what the translator publishes and the
// annotations stage enriches. On the bus each piece is its own key.
type Model struct {
	Servers      map[string]*Server      `json:"servers"`
	Backends     map[string]*Backend     `json:"backends"`
	Certificates map[string]*Certificate `json:"certificates"`
	Ingresses    map[string]*IngressInfo `json:"ingresses"`
	// Secrets are the Secrets annotations name (KindSecret).
	Secrets map[string]*Secret `json:"secrets,omitempty"`
	// Settings are the controller settings (key SettingsKey).
	Settings *Settings `json:"settings,omitempty"`
	// Streams are the TCP and UDP services (key StreamServicesKey); nil
	// when neither ConfigMap is configured.
	Streams *StreamServices `json:"streams,omitempty"`
}

// NewModel returns an empty model.
func NewModel() Model {
	return Model{
		Servers:      map[string]*Server{},
		Backends:     map[string]*Backend{},
		Certificates: map[string]*Certificate{},
		Ingresses:    map[string]*IngressInfo{},
		Secrets:      map[string]*Secret{},
	}
}
