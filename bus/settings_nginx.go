package bus

// NginxSettings are controller ConfigMap keys that each set one NGINX
// directive at http level (or in events{}), with nothing of Switchyard's
// own in between.
type NginxSettings struct {
	DefaultType                string `json:"defaultType"`                // default-type: MIME type of a response without one
	EnableUnderscoresInHeaders bool   `json:"enableUnderscoresInHeaders"` // enable-underscores-in-headers
	IgnoreInvalidHeaders       bool   `json:"ignoreInvalidHeaders"`       // ignore-invalid-headers
	MapHashBucketSize          int    `json:"mapHashBucketSize"`          // map-hash-bucket-size
	ProxyHeadersHashBucketSize int    `json:"proxyHeadersHashBucketSize"` // proxy-headers-hash-bucket-size
	ProxyHeadersHashMaxSize    int    `json:"proxyHeadersHashMaxSize"`    // proxy-headers-hash-max-size
	LimitRate                  int    `json:"limitRate"`                  // limit-rate: bytes per second to a client, 0 unlimited
	LimitRateAfter             int    `json:"limitRateAfter"`             // limit-rate-after: bytes sent before limit-rate applies
	AllowBackendServerHeader   bool   `json:"allowBackendServerHeader"`   // allow-backend-server-header: pass the backend's Server header
	EnableMultiAccept          bool   `json:"enableMultiAccept"`          // enable-multi-accept
}

// defaultNginxSettings are ingress-nginx's defaults.
func defaultNginxSettings() NginxSettings {
	return NginxSettings{
		DefaultType: "text/html", IgnoreInvalidHeaders: true, MapHashBucketSize: 64,
		ProxyHeadersHashBucketSize: 64, ProxyHeadersHashMaxSize: 512, EnableMultiAccept: true,
	}
}
