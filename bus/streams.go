package bus

// TCP and UDP services (--tcp-services-configmap, --udp-services-configmap):
// ingress-nginx's ConfigMaps whose keys are ports NGINX listens on and
// whose values name the Service port to proxy them to,
// "<namespace>/<service>:<port>[:PROXY][:PROXY]". The translator resolves
// them to endpoints and publishes them whole under StreamServicesKey (a
// few entries, so one key); the renderer writes NGINX's stream servers.

// KindStream is the model kind of the stream (layer 4) services.
const KindStream = "stream"

// StreamServicesKey is the model key of the TCP and UDP services.
const StreamServicesKey = KindStream + ".services"

// Stream protocols, as Service ports spell them.
const (
	ProtocolTCP = "TCP"
	ProtocolUDP = "UDP"
)

// StreamServices are the TCP and UDP services that resolved to a Service
// port, sorted by port, and what was wrong with the entries left out.
type StreamServices struct {
	TCP []StreamService `json:"tcp,omitempty"`
	UDP []StreamService `json:"udp,omitempty"`
	// Problems name the ConfigMap and key of each entry left out or
	// served otherwise than asked; nothing renders them.
	Problems []Problem `json:"problems,omitempty"`
}

// StreamService is one entry: NGINX listens on Port and proxies to the
// ready endpoints of Service.
type StreamService struct {
	Port int `json:"port"`
	// ConfigMap is the ConfigMap the entry is from, "namespace/name".
	ConfigMap string `json:"configMap"`
	// Service is the Service port, by the name or number the entry gave.
	Service ServiceRef `json:"service"`
	// ProxyProtocolDecode (the first PROXY): the listener expects a PROXY
	// header from the client. ProxyProtocolEncode (the second): NGINX sends
	// one to the backend. TCP only, as in ingress-nginx.
	ProxyProtocolDecode bool `json:"proxyProtocolDecode,omitempty"`
	ProxyProtocolEncode bool `json:"proxyProtocolEncode,omitempty"`
	// Endpoints are the ready endpoints; none closes each connection.
	Endpoints []Endpoint `json:"endpoints"`
}

// UpstreamName is ingress-nginx's name of the entry's upstream:
// "tcp-<namespace>-<service>-<port>" (or udp-).
func (s StreamService) UpstreamName(protocol string) string {
	prefix := "tcp-"
	if protocol == ProtocolUDP {
		prefix = "udp-"
	}
	return prefix + s.Service.Namespace + "-" + s.Service.Name + "-" + s.Service.Port
}
