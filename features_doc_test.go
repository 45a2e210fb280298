package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins/builtin"
)

// feature is one row group of docs/features.md: where one user-visible
// feature lives, stage by stage. Code is named by symbol ("dir.Name", or
// "dir.Type.method" for a method), never by file: the generator finds the
// file, so a moved function only needs `go test -update`, and a renamed or
// deleted one fails TestFeatureMapIsCurrent until the map follows.
type feature struct {
	name, summary string
	// plugin is the built-in plugin owning keys (annotations relative to
	// the prefix); every key of every built-in plugin is in some feature.
	plugin string
	keys   []string
	// busTypes are the bus contract's types: bus, and bus/features (the
	// leaf package plugins link, which bus re-exports).
	busTypes []string
	// tables are the table keys the feature travels in, "stage.kind …"
	// with a note on the field that carries it.
	tables []string
	// code, by stage or part: symbols.
	translator, annotations, renderer, applier []string
	// files are files named as they are: templates, Lua modules, golden
	// inputs.
	templates, lua, testdata []string
	tests                    []string // symbols of tests
}

func canaryFeature(name, summary string, keys []string, tests ...string) feature {
	return feature{name: name, summary: summary, plugin: "canary", keys: keys,
		busTypes: []string{"bus.IngressInfo", "bus.LocationCanary", "bus/features.Canary"},
		tables: []string{
			"translator.ingress.<ns>.<name> (canary: the translator decides it once)",
			"translator.server.<host> (locations[].canary: the primary's location links its canary)",
			"annotations.backend.<name> (trafficShapingPolicy on the canary, alternativeBackends on the primary)",
		},
		translator:  []string{"stages/translator.Translator.plan", "stages/translator.Translator.attachCanaries"},
		annotations: []string{"stages/annotations.Annotator.policy", "stages/annotations.Annotator.applyCanary"},
		renderer:    []string{"stages/renderer.checkCanaryFields", "stages/renderer.Renderer.flushBackend"},
		lua:         []string{"lua/switchyard/balancer.lua"},
		testdata:    []string{"stages/translator/testdata/canary.yaml", "stages/annotations/testdata/canary-routing.model.json"},
		tests: append([]string{"plugins/builtin/canary.TestApply", "stages/annotations.TestCanaryBackends",
			"stages/renderer.TestCanaryBackendFields", "lua.dataPlane.testCanary", "integration.TestCanaryRouting"}, tests...),
	}
}

var features = []feature{
	canaryFeature("Canary by header", "A request with the header (equal to canary-by-header-value, or matching canary-by-header-pattern; \"always\"/\"never\" without either) goes to the canary.",
		[]string{"canary", "canary-by-header", "canary-by-header-value", "canary-by-header-pattern"}, "lua.dataPlane.testInvalidCanary"),
	canaryFeature("Canary by cookie", "A request whose cookie is \"always\" goes to the canary, \"never\" to the primary; checked after the header.",
		[]string{"canary-by-cookie"}),
	canaryFeature("Canary by weight", "Otherwise, canary-weight out of canary-weight-total requests go to the canary.",
		[]string{"canary-weight", "canary-weight-total"}, "integration.TestCanaryWithoutPrimaryOrInvalid"),
	{
		name: "Basic auth", summary: "Users of an htpasswd Secret (auth-file or auth-map); a missing Secret answers 503.",
		plugin: "auth", keys: []string{"auth-type", "auth-secret", "auth-secret-type", "auth-realm"},
		busTypes: []string{"bus/features.Auth", "bus/features.BasicAuth", "bus.Secret"},
		tables: []string{"translator.secret.<ns>.<name> (the Secrets annotations name)",
			"annotations.server.<host> (locations[].features.auth.basic)", "renderer.file.auth/<hash>.htpasswd"},
		translator:  []string{"stages/translator.ingressPlan.addAnnotationSecrets"},
		annotations: []string{"stages/annotations.Annotator.markSecretUsers"},
		renderer:    []string{"stages/renderer.authFor", "stages/renderer.newBasicAuthView", "stages/renderer.AuthFile", "stages/renderer.Renderer.setAuthFiles"},
		templates:   []string{"templates/auth.tmpl"},
		testdata:    []string{"stages/annotations/testdata/features.model.json", "stages/renderer/testdata/auth.model.json"},
		tests: []string{"plugins/builtin/auth.TestApply", "stages/translator.TestAnnotationSecrets",
			"integration.TestBasicAuthThroughNginx", "integration.TestSecretsNeverPrinted"},
	},
	{
		name: "External auth", summary: "auth_request to an auth service: 2xx passes, 401/403 are answered (401 may redirect to auth-signin), anything else is a 500; the service's Set-Cookie reaches the client on success (always with auth-always-set-cookie). auth-cache-key caches its answers in a shared proxy cache under a hash of the key (auth-cache-duration as proxy_cache_valid); auth-keepalive keeps connections to it in a keepalive upstream (literal host only; the auth request gets its own X-Request-ID unless auth-keepalive-share-vars); auth-proxy-set-headers' ConfigMap adds request headers (missing or invalid: 503).",
		plugin: "auth", keys: []string{"auth-url", "auth-method", "auth-signin", "auth-signin-redirect-param", "auth-response-headers",
			"auth-request-redirect", "auth-always-set-cookie", "auth-cache-key", "auth-cache-duration", "auth-proxy-set-headers",
			"auth-keepalive", "auth-keepalive-requests", "auth-keepalive-timeout", "auth-keepalive-share-vars"},
		busTypes:   []string{"bus/features.Auth", "bus/features.ExternalAuth", "bus/features.AuthKeepalive"},
		tables:     []string{"annotations.server.<host> (locations[].features.auth.external)", "renderer.file.http.d/zones.conf"},
		translator: []string{"stages/translator.ingressPlan.addAuthProxySetHeaders"},
		renderer:   []string{"stages/renderer.authFor", "stages/renderer.authView.resolveExternal", "stages/renderer.externalAuthView.resolvePool", "stages/renderer.authZones"},
		templates:  []string{"templates/auth.tmpl", "templates/zones.conf.tmpl"},
		testdata:   []string{"stages/annotations/testdata/features.model.json", "stages/renderer/testdata/auth.model.json", "stages/renderer/testdata/authcache.model.json"},
		tests: []string{"plugins/builtin/auth.TestApply", "stages/renderer.TestLocationViewRefuses", "integration.TestExternalAuthThroughNginx", "integration.TestAuthAnnotationsRefused",
			"integration.TestAuthCacheKeepaliveAndHeadersThroughNginx"},
	},
	{
		name: "Rate limit", summary: "Requests per second or minute, connections and response rate per client address (or per value of the ConfigMap's limit-conn-zone-variable); the ConfigMap's limit-req-status-code and limit-conn-status-code answer the excess.",
		plugin: "ratelimit", keys: []string{"limit-rps", "limit-rpm", "limit-connections", "limit-burst-multiplier", "limit-rate", "limit-rate-after", "limit-allowlist"},
		busTypes:  []string{"bus/features.RateLimit"},
		tables:    []string{"annotations.server.<host> (locations[].features.rateLimit)", "renderer.file.http.d/zones.conf"},
		renderer:  []string{"stages/renderer.rateLimitID", "stages/renderer.serverZones", "stages/renderer.newRateLimitView", "stages/renderer.Renderer.flushZones"},
		templates: []string{"templates/server.conf.tmpl", "templates/zones.conf.tmpl"},
		testdata:  []string{"stages/annotations/testdata/features.model.json", "stages/renderer/testdata/ratelimit.model.json"},
		tests:     []string{"plugins/builtin/ratelimit.TestApply", "stages/renderer.TestRateLimitZonesIncremental", "stages/renderer.TestLocationView", "integration.TestRateLimitAnnotations"},
	},
	{
		name: "Rewrite", summary: "rewrite-target with the path regex's captures, use-regex paths, app-root and x-forwarded-prefix.",
		plugin: "rewrite", keys: []string{"rewrite-target", "use-regex", "app-root", "x-forwarded-prefix"},
		busTypes:  []string{"bus/features.Rewrite"},
		tables:    []string{"annotations.server.<host> (locations[].features.rewrite)"},
		renderer:  []string{"stages/renderer.regexLocations", "stages/renderer.newRewriteView", "stages/renderer.rewriteRegex", "stages/renderer.rewriteTarget"},
		templates: []string{"templates/server.conf.tmpl"},
		testdata:  []string{"stages/annotations/testdata/features.model.json", "stages/renderer/testdata/redirect.model.json"},
		tests: []string{"plugins/builtin/rewrite.TestParse", "stages/renderer.TestRegexLocationsOrder",
			"integration.TestRewriteTargetAndRegexPaths", "integration.TestAppRoot"},
	},
	{
		name: "Proxy settings", summary: "Body size, buffering, timeouts, retries over endpoints, HTTP version, cookie and redirect rewriting, and the Host and Connection headers sent upstream; unset keys keep the ConfigMap's value (bus.ProxySettings), written at http level; the ConfigMap's service-upstream is the default of the annotation.",
		plugin: "proxy", keys: []string{"proxy-body-size", "client-body-buffer-size", "proxy-buffering", "proxy-buffers-number", "proxy-buffer-size",
			"proxy-busy-buffers-size", "proxy-max-temp-file-size", "proxy-request-buffering", "proxy-connect-timeout", "proxy-send-timeout",
			"proxy-read-timeout", "proxy-next-upstream", "proxy-next-upstream-timeout", "proxy-next-upstream-tries", "proxy-http-version",
			"proxy-cookie-domain", "proxy-cookie-path", "proxy-redirect-from", "proxy-redirect-to", "connection-proxy-header", "upstream-vhost",
			"service-upstream", "use-port-in-redirects", "relative-redirects"},
		busTypes:   []string{"bus/features.Proxy", "bus.ProxySettings"},
		tables:     []string{"annotations.server.<host> (locations[].features.proxy)", "translator.config.controller (settings)"},
		translator: []string{"stages/translator.parseLargeHeaderBuffers", "stages/translator.serviceUpstreamBackend"},
		renderer:   []string{"stages/renderer.newProxyView", "stages/renderer.proxyDirectives", "stages/renderer.proxyBuffers", "stages/renderer.newHTTPProxyLines", "stages/renderer.newClientLines"},
		templates:  []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl", "templates/proxy_headers.tmpl"},
		lua:        []string{"lua/switchyard/balancer.lua"},
		testdata: []string{"stages/renderer/testdata/proxy.model.json", "stages/renderer/testdata/settings.model.json",
			"stages/translator/testdata/service-upstream.yaml"},
		tests: []string{"plugins/builtin/proxy.TestParse", "stages/translator.TestParseSettingsValid", "integration.TestProxySettingsThroughNginx"},
	},
	{
		name: "Redirects", summary: "permanent-redirect and temporal-redirect; ssl-redirect and force-ssl-redirect (decided per request in Lua, from the published certificates); from-to-www-redirect.",
		plugin: "redirect", keys: []string{"ssl-redirect", "force-ssl-redirect", "preserve-trailing-slash", "from-to-www-redirect",
			"permanent-redirect", "permanent-redirect-code", "temporal-redirect", "temporal-redirect-code"},
		busTypes:  []string{"bus/features.Redirect"},
		tables:    []string{"annotations.server.<host> (locations[].features.redirect)"},
		renderer:  []string{"stages/renderer.kindOf", "stages/renderer.luaLocation", "stages/renderer.newWWWView", "stages/renderer.wwwRedirect"},
		templates: []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl"},
		lua:       []string{"lua/switchyard/ingress.lua"},
		testdata:  []string{"stages/annotations/testdata/features.model.json", "stages/renderer/testdata/redirect.model.json"},
		tests: []string{"plugins/builtin/redirect.TestParse", "stages/renderer.TestFromToWWWFollowsTheOtherHost", "lua.dataPlane.testTLSHosts",
			"integration.TestPermanentAndTemporalRedirect", "integration.TestForceSSLRedirectAndSSLRedirectOff", "integration.TestFromToWWWRedirect"},
	},
	{
		name: "Load balancing", summary: "load-balance (round_robin, ewma) and the consistent hashes upstream-hash-by and its subsets, per backend; the oldest Ingress wins a shared backend, in ingress-nginx's order.",
		plugin: "balancing", keys: []string{"load-balance", "upstream-hash-by", "upstream-hash-by-subset", "upstream-hash-by-subset-size"},
		busTypes:    []string{"bus/features.Balancing", "bus/features.UpstreamHashByConfig"},
		tables:      []string{"annotations.backend.<name> (load-balance, upstreamHashByConfig)", "renderer.backend.<name> (the Lua payload)"},
		annotations: []string{"stages/annotations.Annotator.balancingOf", "stages/annotations.applyBalancing"},
		renderer:    []string{"stages/renderer.Renderer.flushBackend"},
		lua: []string{"lua/switchyard/balancer.lua", "lua/switchyard/balancers/round_robin.lua", "lua/switchyard/balancers/ewma.lua",
			"lua/switchyard/balancers/chash.lua", "lua/switchyard/balancers/chashsubset.lua", "lua/switchyard/util/chash_ring.lua", "lua/switchyard/util/endpoints.lua"},
		testdata: []string{"stages/annotations/testdata/balancing.model.json", "stages/renderer/testdata/balancing.model.json"},
		tests: []string{"plugins/builtin/balancing.TestApply", "stages/annotations.TestBalancingBackends", "stages/renderer.TestBackendBalancingPayload",
			"lua.dataPlane.testEWMA", "lua.dataPlane.testCHash", "lua.dataPlane.testCHashSubset", "integration.TestBalancingThroughNginx"},
	},
	{
		name: "Session affinity", summary: "Cookie affinity (affinity: cookie), balanced or persistent, with the session-cookie-* attributes.",
		plugin: "balancing", keys: []string{"affinity", "affinity-mode", "affinity-canary-behavior", "session-cookie-name", "session-cookie-path",
			"session-cookie-domain", "session-cookie-expires", "session-cookie-max-age", "session-cookie-secure", "session-cookie-samesite",
			"session-cookie-conditional-samesite-none", "session-cookie-change-on-failure"},
		busTypes:    []string{"bus/features.Balancing", "bus/features.SessionAffinityConfig", "bus/features.CookieSessionAffinity"},
		tables:      []string{"annotations.backend.<name> (sessionAffinityConfig)"},
		annotations: []string{"stages/annotations.applyBalancing"},
		lua:         []string{"lua/switchyard/affinity/sticky.lua", "lua/switchyard/affinity/balanced.lua", "lua/switchyard/affinity/persistent.lua"},
		testdata:    []string{"stages/annotations/testdata/balancing.model.json"},
		tests: []string{"plugins/builtin/balancing.TestApply", "lua.dataPlane.testStickyCookie", "lua.dataPlane.testStickyModes",
			"lua.dataPlane.testStickyChangeOnFailure", "integration.TestBalancingThroughNginx"},
	},
	{
		name: "Source ranges and block lists", summary: "allowlist-source-range (whitelist-source-range) and denylist-source-range: NGINX allow/deny per location, deny first, 403 for everyone else; checked against the client address after real_ip; an unreadable list rejects the Ingress; satisfy any lets a request through when one access check (source ranges, basic or external auth) passes. The ConfigMap's whitelist-source-range and denylist-source-range apply to every location whose Ingress has no list of that kind; block-cidrs denies in every location; block-user-agents and block-referers are maps every server checks (403). An unreadable (or NGINX-refused) ConfigMap list denies every location it applies to. On a Lua-routed host router.lua decides on the same allow and deny lines (see Lua routing of hosts).",
		lua:    []string{"lua/switchyard/router.lua", "lua/switchyard/util/cidr.lua"},
		plugin: "access", keys: []string{"allowlist-source-range", "denylist-source-range", "satisfy"},
		busTypes:   []string{"bus/features.Access", "bus.AccessSettings"},
		tables:     []string{"annotations.server.<host> (locations[].features.access)", "translator.config.controller (the ConfigMap's access keys)"},
		translator: []string{"stages/translator.cidrListSetting", "stages/translator.mapMatchSetting", "stages/translator.invalidSetting"},
		renderer:   []string{"stages/renderer.accessGroups", "stages/renderer.blockMaps", "stages/renderer.serverBlocks", "stages/renderer.failClosedSetting"},
		templates:  []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl"},
		testdata:   []string{"stages/renderer/testdata/upstream.model.json", "stages/renderer/testdata/global-access.model.json", "stages/renderer/testdata/global-access-unreadable.model.json"},
		tests: []string{"plugins/builtin/access.TestParse", "bus/features.TestValidMapMatch", "bus/features.FuzzParseMapMatchList", "stages/translator.TestAccessKeysFailClosed",
			"stages/renderer.TestAccessGroups", "stages/renderer.TestRefusedAccessKeyFailsClosed", "integration.TestSourceRangesThroughNginx", "integration.TestSatisfyThroughNginx", "integration.TestGlobalAccessThroughNginx",
			"lua.dataPlane.testCIDRMatch", "lua.dataPlane.testCIDRAgreesWithNetip", "lua.dataPlane.testAccessAgreesWithNginx", "integration.TestLuaRoutedSourceRanges"},
	},
	{
		name: "Global external auth", summary: "The ConfigMap's global-auth-url (with -method, -signin, -signin-redirect-param, -response-headers, -request-redirect, -cache-key, -cache-duration) asks the auth service about every location, next to its basic auth, unless its Ingress has its own auth-url, says enable-global-auth: false, or its path starts with one of no-auth-locations; an unreadable global-auth-url answers 403 where it would apply.",
		plugin: "auth", keys: []string{"enable-global-auth"},
		busTypes:   []string{"bus.GlobalAuthSettings", "bus/features.GlobalAuth"},
		tables:     []string{"translator.config.controller (the ConfigMap's global-auth-* keys)", "annotations.server.<host> (locations[].features.globalAuth)"},
		translator: []string{"stages/translator.globalAuthURLSetting"},
		renderer:   []string{"stages/renderer.withGlobalAuth"},
		templates:  []string{"templates/server.conf.tmpl", "templates/auth.tmpl"},
		testdata:   []string{"stages/renderer/testdata/global-auth.model.json", "stages/renderer/testdata/global-auth-unreadable.model.json"},
		tests:      []string{"stages/translator.TestGlobalAuthURLFailsClosed", "integration.TestGlobalAuthThroughNginx"},
	},
	{
		name: "CORS", summary: "enable-cors and the cors-* annotations, applied per request in Lua: a preflight from an allowed origin is answered 204 before auth and access rules, every other answer to an allowed origin gets the CORS headers (with Vary: Origin), any other origin gets none; unreadable values fall back to ingress-nginx's defaults with a warning.",
		plugin: "cors", keys: []string{"enable-cors", "cors-allow-origin", "cors-allow-methods", "cors-allow-headers", "cors-expose-headers", "cors-allow-credentials", "cors-max-age"},
		busTypes:  []string{"bus/features.CORS"},
		tables:    []string{"annotations.server.<host> (locations[].features.cors)"},
		renderer:  []string{"stages/renderer.newCORSView"},
		templates: []string{"templates/server.conf.tmpl"},
		lua:       []string{"lua/switchyard/cors.lua"},
		testdata:  []string{"stages/renderer/testdata/upstream.model.json"},
		tests:     []string{"plugins/builtin/cors.TestParse", "integration.TestCORSThroughNginx"},
	},
	{
		name: "Client certificates (mutual TLS)", summary: "auth-tls-*: the host's server verifies client certificates against the Secret's ca.crt (and ca.crl), optional match-cn and error page, the result (and the certificate) sent upstream in ssl-client-*; the oldest Ingress of a host that asks decides (ingress-nginx's order); a missing Secret answers 503, plain HTTP 403 with verify on, and a client's own ssl-client-* headers never reach a backend.",
		plugin: "authtls", keys: []string{"auth-tls-secret", "auth-tls-verify-client", "auth-tls-verify-depth", "auth-tls-error-page", "auth-tls-pass-certificate-to-upstream", "auth-tls-match-cn"},
		busTypes:    []string{"bus/features.ClientAuth", "bus.Server"},
		tables:      []string{"annotations.server.<host> (clientAuth, clientAuthFrom)", "renderer.file.auth/<hash>.client-ca.pem (secret-derived files)"},
		annotations: []string{"stages/annotations.Annotator.applyServerFeatures"},
		renderer:    []string{"stages/renderer.newClientAuthView", "stages/renderer.clientAuthFiles"},
		templates:   []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl", "templates/proxy_headers.tmpl"},
		lua:         []string{"lua/switchyard/ingress.lua"},
		testdata:    []string{"stages/renderer/testdata/upstream.model.json"},
		tests:       []string{"plugins/builtin/authtls.TestParse", "integration.TestClientCertificatesThroughNginx"},
	},
	{
		name: "TLS passthrough", summary: "ssl-passthrough with --enable-ssl-passthrough: NGINX's stream module reads the SNI name on the HTTPS addresses and hands a passthrough host's TLS unterminated to one ready endpoint of its \"/\" backend, picked at random per connection by templates/passthrough.js (njs, libnginx-mod-stream-js) from the host's file the applier keeps, so an endpoint change never reloads NGINX; every other host goes to the http module's TLS listener (a unix socket) with a PROXY header, so source ranges, logs and X-Forwarded-For see the client. Which hosts are passed through is a map in the stream file: adding or removing one reloads NGINX. Without the flag, a warning.",
		plugin: "passthrough", keys: []string{"ssl-passthrough"},
		busTypes:    []string{"bus/features.Passthrough", "bus.Server", "bus.PassthroughEndpoints"},
		tables:      []string{"annotations.server.<host> (sslPassthrough, passthroughBackend, passthroughFrom)", "renderer.file.stream.d/passthrough.conf", "renderer.file.stream.d/passthrough.js", "renderer.passthrough.<host>"},
		annotations: []string{"stages/annotations.Annotator.applyServerFeatures", "stages/annotations.Annotator.checkPassthrough"},
		renderer:    []string{"stages/renderer.Renderer.renderStream", "stages/renderer.Renderer.flushStream", "stages/renderer.listens"},
		applier:     []string{"stages/applier.Stage.syncPassthrough", "stages/applier.decodePassthrough"},
		templates:   []string{"templates/stream.conf.tmpl", "templates/nginx.conf.tmpl", "templates/passthrough.js"},
		testdata:    []string{"stages/renderer/testdata/passthrough.model.json", "stages/renderer/testdata/passthrough-proxy-protocol.model.json"},
		tests: []string{"plugins/builtin/passthrough.TestParse", "stages/annotations.TestPassthroughOntoServer", "stages/renderer.TestPassthroughFollowsEndpoints",
			"stages/applier.TestPassthroughFilesSync", "stages/applier.TestPassthroughFilesRefuseBadNames", "stages/applier.FuzzPassthroughValue",
			"integration.TestSSLPassthroughThroughNginx", "integration.TestSSLPassthroughBehindProxyProtocol", "integration.TestPassthroughScriptReadsOnlyHostFiles"},
	},
	{
		name: "TCP and UDP services", summary: "--tcp-services-configmap and --udp-services-configmap, ingress-nginx's \"<port>\": \"<namespace>/<service>:<port>[:PROXY][:PROXY]\": one stream server per entry on the HTTP listeners' hosts, to the ready endpoints of the Service port (by number or name, of the ConfigMap's protocol); the first PROXY decodes the client's header (address trusted from proxy-real-ip-cidr), the second sends one to the backend; the proxy-stream-* keys. Debian has no stream Lua: an endpoint change rewrites the file and reloads NGINX (coalesced), open connections stay with the old workers. A bad entry, a missing Service or port, or one of Switchyard's own ports is reported by ConfigMap key and left out; so is an entry whose port another process holds (NGINX's bind() on the reload, traced to the entry and refused), until the port is free. Connections are logged in log-format-stream to stream-access-log-path (else the access log's file) unless disable-access-log or disable-stream-access-log.",
		busTypes:   []string{"bus.StreamServices", "bus.StreamService", "bus.StreamSettings", "bus.Refusal"},
		tables:     []string{"translator.stream.services (passed through by the annotations stage)", "renderer.file.stream.d/services.conf", "refusals.services.<protocol>.<port>"},
		translator: []string{"stages/translator.parseStreamEntry", "stages/translator.Translator.refreshStreams", "stages/translator.Translator.streamServices"},
		renderer: []string{"stages/renderer.Renderer.flushServices", "stages/renderer.Renderer.serviceServer",
			"stages/renderer.serviceSource", "stages/renderer.Renderer.serviceRevs", "stages/renderer.newStreamLogView"},
		applier:   []string{"stages/applier.attributeBind", "stages/applier.Stage.freeHeldPorts", "stages/applier.stillHeld", "internal/nginx.Local.Localize"},
		templates: []string{"templates/stream_services.conf.tmpl", "templates/nginx.conf.tmpl"},
		testdata:  []string{"stages/translator/testdata/stream-services.yaml", "stages/renderer/testdata/stream-services.model.json"},
		tests: []string{"stages/translator.TestParseStreamEntry", "stages/translator.FuzzParseStreamEntry", "stages/translator.TestStreamsFollowEndpoints",
			"stages/renderer.TestServicesRefusals", "stages/renderer.TestStreamLogView", "stages/applier.TestAttributeBind", "stages/applier.TestHeldPortRefusals",
			"integration.TestTCPAndUDPServicesThroughNginx", "integration.TestHeldServicesPortIsRefused", "integration.TestStreamAccessLogThroughNginx"},
	},
	{
		name: "OCSP stapling", summary: "enable-ocsp: the applier fetches an OCSP response for each served certificate whose leaf names a responder and whose Secret holds the issuer, checks it against the issuer, refetches it halfway to its NextUpdate (failures with backoff) and posts it with the certificates; certificate.lua staples it until it expires. Nothing is fetched on the request path; without a response the certificate is served without a staple. A revoked answer is stapled as revoked.",
		busTypes: []string{"bus.TLSSettings"},
		tables:   []string{"renderer.certificate.<ns>.<name> (ocsp: stapling asked)"},
		renderer: []string{"stages/renderer.Renderer.flushCertificate"},
		applier:  []string{"stages/applier.stapler", "stages/applier.checkOCSPResponse", "stages/applier.Stage.pushStaples"},
		lua:      []string{"lua/switchyard/certificate.lua", "lua/switchyard/configuration.lua"},
		testdata: []string{"stages/renderer/testdata/ocsp.model.json"},
		tests: []string{"stages/applier.TestStaplerFetchesRefreshesAndRetries", "stages/applier.TestStaplerRetriesAFailingResponder",
			"stages/renderer.TestEnableOCSPMarksEveryCertificate", "integration.TestOCSPStaplingThroughNginx"},
	},
	{
		name: "Backend protocol and TLS to the backend", summary: "backend-protocol HTTPS, GRPC, GRPCS and FCGI (with fastcgi-index; AJP refused), and proxy-ssl-* for the TLS to the backend; each applies without proxy-ssl-secret too, and TLS that cannot be set up answers 503.",
		plugin: "upstream", keys: []string{"backend-protocol", "fastcgi-index", "fastcgi-params-configmap", "proxy-ssl-secret", "proxy-ssl-verify", "proxy-ssl-verify-depth",
			"proxy-ssl-ciphers", "proxy-ssl-protocols", "proxy-ssl-name", "proxy-ssl-server-name"},
		busTypes:  []string{"bus/features.Upstream", "bus/features.UpstreamTLS"},
		tables:    []string{"annotations.server.<host> (locations[].features.upstream)", "renderer.file.auth/<hash>.pem (secret-derived files)"},
		renderer:  []string{"stages/renderer.newUpstreamView", "stages/renderer.upstreamTLSLines", "stages/renderer.upstreamFiles"},
		templates: []string{"templates/server.conf.tmpl", "templates/proxy_headers.tmpl"},
		testdata:  []string{"stages/renderer/testdata/upstream.model.json"},
		tests:     []string{"plugins/builtin/upstream.TestParse", "integration.TestBackendProtocolThroughNginx"},
	},
	{
		name: "Mirroring", summary: "mirror-target, mirror-host, mirror-request-body: every request of the location is also sent to the target by NGINX's mirror module, its answer dropped; the target's host is literal (no client can choose where requests go), and $request_uri, $uri or a path may follow it; without the body the Content-Length is dropped too.",
		plugin: "mirror", keys: []string{"mirror-target", "mirror-host", "mirror-request-body"},
		busTypes:  []string{"bus/features.Mirror"},
		tables:    []string{"annotations.server.<host> (locations[].features.mirror)"},
		renderer:  []string{"stages/renderer.newMirrorView"},
		templates: []string{"templates/server.conf.tmpl"},
		testdata:  []string{"stages/renderer/testdata/upstream.model.json"},
		tests:     []string{"plugins/builtin/mirror.TestParse", "integration.TestMirrorThroughNginx", "integration.TestCVEInjectionRejected"},
	},
	{
		name: "ModSecurity and the OWASP Core Rule Set", summary: "enable-modsecurity, enable-owasp-core-rules, modsecurity-transaction-id and the ConfigMap's enable-modsecurity (every server, the catch-all's default backend included; every host then keeps a server block of its own) and enable-owasp-modsecurity-crs: Debian's ModSecurity v3 connector with Switchyard's default configuration (SecRuleEngine DetectionOnly as in ingress-nginx; matches audit-logged as JSON on NGINX's stderr) or the operator's --modsecurity-config, and Debian's modsecurity-crs; enable-modsecurity: false opts a location out. The module is loaded only while a server runs it; where it is not installed, a location asking for it answers 503 and is reported. A modsecurity-snippet that is exactly one SecRuleEngine On/DetectionOnly/Off line sets the location's engine mode (the ConfigMap's, every server's); any other stays refused.",
		plugin: "modsecurity", keys: []string{"enable-modsecurity", "enable-owasp-core-rules", "modsecurity-transaction-id", "modsecurity-snippet"},
		busTypes:    []string{"bus/features.ModSecurity", "bus.ModSecuritySettings"},
		tables:      []string{"annotations.server.<host> (locations[].features.modSecurity)", "translator.config.controller (enable-modsecurity, enable-owasp-modsecurity-crs)"},
		translator:  []string{"stages/translator.modSecuritySettings"},
		annotations: []string{"stages/annotations.Annotator.typedValue", "bus/features.ParseSecRuleEngine"},
		renderer:    []string{"stages/renderer.newLocationModSecurity", "stages/renderer.newServerModSecurity", "stages/renderer.withoutModSecurity", "stages/renderer.usesModSecurity"},
		templates:   []string{"templates/server.conf.tmpl", "templates/modsecurity_default.conf", "templates/modsecurity_crs.conf"},
		testdata:    []string{"stages/renderer/testdata/modsecurity.model.json", "stages/renderer/testdata/modsecurity-configmap.model.json"},
		tests: []string{"plugins/builtin/modsecurity.TestParse", "stages/renderer.TestModSecurityModuleLoadedOnlyInUse", "stages/renderer.TestGlobalModSecurityOnTheCatchAll",
			"integration.TestModSecurityBlocksThroughNginx", "integration.TestModSecurityDetectsThroughNginx",
			"integration.TestModSecuritySnippetEngineThroughNginx", "bus/features.TestParseSecRuleEngine", "stages/annotations.TestModSecuritySnippetTypedValue"},
	},
	{
		name: "Bad annotations and fail closed", summary: "A value that does not match its pattern, a risk above annotations-risk-level or a snippet is a Problem on the Ingress; an annotation that must hold and cannot (plugin down, Secret missing) makes the location answer 503 (Deny).",
		busTypes:    []string{"bus.Problem", "bus/features.Deny"},
		tables:      []string{"annotations.ingress.<ns>.<name> (problems)", "annotations.server.<host> (locations[].features.deny)"},
		annotations: []string{"stages/annotations.Annotator.refuse", "stages/annotations.Annotator.snippetProblem"},
		renderer:    []string{"stages/renderer.kindOf", "stages/renderer.protected", "stages/renderer.withoutForeignNested"},
		templates:   []string{"templates/server.conf.tmpl"},
		testdata:    []string{"stages/annotations/testdata/refusals.model.json"},
		tests: []string{"stages/annotations.TestHostRejects", "stages/annotations.TestHostBuiltinThatCannotStartFailsClosed",
			"stages/renderer.TestWithoutForeignNested", "integration.TestRegexPathOfAnotherNamespaceCannotOpenAuth"},
	},
	{
		name: "Response and request headers", summary: "custom-headers (a ConfigMap of the Ingress's namespace, or of another with allow-cross-namespace-resources, read by the translator; a missing ConfigMap or a bad header rejects the Ingress) and the ConfigMap's add-headers, proxy-set-headers and hide-headers.",
		plugin: "headers", keys: []string{"custom-headers"},
		busTypes:    []string{"bus.IngressInfo", "bus.HTTPSettings", "bus/features.Header"},
		tables:      []string{"translator.ingress.<ns>.<name> (customHeaders)", "translator.config.controller (addHeaderValues, proxySetHeaderValues)"},
		translator:  []string{"stages/translator.ingressPlan.addCustomHeaders", "stages/translator.resolveHeaders", "stages/translator.checkHeaders"},
		annotations: []string{"stages/annotations.Annotator.annotate"},
		renderer:    []string{"stages/renderer.headerViews", "stages/renderer.newHTTPView"},
		templates:   []string{"templates/http_settings.tmpl", "templates/server.conf.tmpl", "templates/auth.tmpl"},
		testdata:    []string{"stages/renderer/testdata/http-settings.model.json"},
		tests: []string{"stages/translator.TestCustomHeaders", "stages/translator.TestResolveHeaders",
			"integration.TestCustomHeadersOnResponse", "integration.TestAddAndProxySetHeaders"},
	},
	{
		name: "Server settings", summary: "server-alias (other names of the host; a name that is another rule's host is left out with a warning), ssl-ciphers and ssl-prefer-server-ciphers per server; the oldest Ingress of a host that sets one decides it (ingress-nginx's order).",
		plugin: "server", keys: []string{"server-alias", "ssl-ciphers", "ssl-prefer-server-ciphers"},
		busTypes:    []string{"bus/features.Server", "bus.Server"},
		tables:      []string{"annotations.server.<host> (aliases, sslCiphers, sslPreferServerCiphers)"},
		annotations: []string{"stages/annotations.Annotator.checkAliases", "stages/annotations.Annotator.applyServerFeatures"},
		renderer:    []string{"stages/renderer.serverView.addServerFeatures"},
		templates:   []string{"templates/server.conf.tmpl"},
		testdata:    []string{"stages/renderer/testdata/http-settings.model.json"},
		tests:       []string{"plugins/builtin/server.TestParse", "integration.TestServerAliasServed"},
	},
	{
		name: "Per-location logs", summary: "enable-access-log: false leaves the Ingress's requests out of the access log; enable-rewrite-log: true logs its rewrites. The ConfigMap's access-log-path, http-access-log-path, disable-access-log, disable-http-access-log, access-log-params, skip-access-log-urls and log-format-escape-json/none set the access log itself, enable-syslog with syslog-host and syslog-port sends it (and the http block's errors) to a syslog server; as in ingress-nginx, the catch-all's own default location and external auth subrequests are logged only with enable-access-log-for-default-backend and enable-auth-access-log.",
		plugin: "logs", keys: []string{"enable-access-log", "enable-rewrite-log"},
		busTypes:  []string{"bus/features.Logs", "bus.HTTPSettings"},
		tables:    []string{"annotations.server.<host> (locations[].features.logs)", "translator.config.controller"},
		renderer:  []string{"stages/renderer.newLocationView", "stages/renderer.accessLog"},
		templates: []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl", "templates/http_settings.tmpl"},
		testdata:  []string{"stages/renderer/testdata/http-settings.model.json"},
		tests:     []string{"plugins/builtin/logs.TestParse", "stages/translator.TestParseSettingsValid"},
	},
	{
		name: "Custom error pages and default backends", summary: "--default-backend-service answers what no Ingress matches (else a built-in 404) and serves the pages of the ConfigMap's custom-http-errors; the custom-http-errors annotation replaces the ConfigMap's codes for an Ingress, and default-backend names a Service of its namespace that serves those pages and the Ingress's requests while its Service has no ready endpoint (ingress-nginx). The error backend gets a GET of / with X-Code, X-Format, X-Original-URI, X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port and X-Request-ID; an auth-signin redirect keeps its 401.",
		plugin: "errors", keys: []string{"custom-http-errors", "default-backend", "disable-proxy-intercept-errors"},
		busTypes:   []string{"bus/features.Errors", "bus.Settings"},
		tables:     []string{"annotations.server.<host> (locations[].features.errors)", "translator.backend.<name> (custom-default-backend-<ns>-<service>, upstream-default-backend)", "translator.config.controller"},
		translator: []string{"stages/translator.ingressPlan.addAnnotationDefaultBackend", "stages/translator.Translator.defaultBackendService"},
		renderer:   []string{"stages/renderer.errorsOf", "stages/renderer.serverErrorPages", "stages/renderer.balancerArgs"},
		templates:  []string{"templates/server.conf.tmpl", "templates/nginx.conf.tmpl"},
		lua:        []string{"lua/switchyard/balancer.lua"},
		testdata:   []string{"stages/renderer/testdata/custom-errors.model.json", "stages/translator/testdata/custom-errors.yaml"},
		tests:      []string{"plugins/builtin/errors.TestParse", "plugins/builtin/errors.FuzzParseErrorCodes", "integration.TestCustomHTTPErrors", "integration.TestCustomHTTPErrorsWithAuth"},
	},
	{
		name: "Compression", summary: "use-gzip and enable-brotli (Debian's brotli filter module, loaded only when on) with their levels, minimum lengths and types; gzip-disable leaves out clients by User-Agent.",
		busTypes:  []string{"bus.HTTPSettings"},
		tables:    []string{"translator.config.controller"},
		renderer:  []string{"stages/renderer.newHTTPView", "stages/renderer.newCompressionView"},
		templates: []string{"templates/http_settings.tmpl"},
		testdata:  []string{"stages/renderer/testdata/http-settings.model.json"},
		tests:     []string{"integration.TestGzipOnAndOff", "integration.TestBrotli"},
	},
	{
		name: "Never silent", summary: "Every ingress-nginx annotation and ConfigMap key is known (internal/catalog): implemented, refused, or ignored with a warning; any other name under the prefix is UnknownAnnotation, any other key UnknownKey; `switchyard render` prints every Problem and --strict fails on a degraded or rejected Ingress.",
		busTypes:    []string{"bus.Problem"},
		tables:      []string{"annotations.ingress.<ns>.<name> (problems)", "translator.config.controller (problems)"},
		translator:  []string{"stages/translator.unparsedKey", "stages/translator.KeyStatuses"},
		annotations: []string{"stages/annotations.Annotator.unowned"},
		tests: []string{"stages/annotations.TestHostWarnsUnowned", "stages/translator.TestParseSettingsUnparsedKeys",
			"integration.TestUnsupportedAnnotationsServedWithWarnings", "integration.TestRenderReportsProblems"},
	},
	{
		name: "Pipeline traces", summary: "With --otlp-endpoint, each stage records one OpenTelemetry span per change it handles, with the trace and span ID of the traceparent on the messages it published (what `switchyard trace` prints) and its input's span as parent, exported over OTLP/gRPC; off by default (one atomic load per change). Request traces are the next feature.",
		busTypes: []string{"bus.TraceContext", "bus.StageIDs", "bus.RecordStageSpan", "bus.Pipe"},
		applier:  []string{"stages/applier.Stage.publishResult", "stages/applier.Stage.publishRefusals"},
		tests: []string{"bus.TestStageSpansCarryBusIDs", "bus.TestStageSpansOffByDefault",
			"integration.TestPipelineTraceExported", "integration.TestPipelineTraceAcrossStageProcesses"},
	},
	{
		name:      "Lua routing of hosts",
		summary:   "With --lua-routing, a host whose server needs no NGINX directive of its own (an exact name, or a one-label wildcard *.example.com, which router.lua tries after the exact name; locations that proxy, answer 404, or redirect (permanent-redirect, temporal-redirect with a code of 301, 302, 303, 307 or 308: NGINX answers other codes with the URL as the body), with canaries, balancing, affinity, default-backend, ssl-redirect, force-ssl-redirect, preserve-trailing-slash, HSTS, app-root, x-forwarded-prefix, rewrite-target with use-regex (a path target without a query: router.lua replaces $1-$9 by the captures of the same regex, verbatim, and keeps the query, as NGINX's rewrite ... break does; a target with a query stays a directive), enable-cors and the cors-* annotations (router.lua answers the preflight and its header filter adds the headers, with the same switchyard.cors a server block calls), proxy-connect-timeout, proxy-send-timeout and proxy-read-timeout (set by balancer.lua with ngx.balancer.set_timeouts), upstream-vhost, connection-proxy-header, a proxy-body-size below the ConfigMap's (router.lua checks Content-Length, and reads a body without one before it checks its size; only with proxy-request-buffering on), source ranges (allowlist-source-range, whitelist-source-range, denylist-source-range and the ConfigMap's whitelist-source-range, denylist-source-range and block-cidrs, IPv4 and IPv6: the route carries the server block's allow and deny lines in their order, and router.lua checks them on the realip module's $remote_addr after what the location's rewrite phase does, first match decides, as NGINX's access module does (an IPv4-mapped client is checked as IPv4 when there is an IPv4 rule); a list that cannot be enforced denies everyone there too; satisfy any only without auth)) has no server block: the catch-all server's server_rewrite hook sends its requests to @switchyard_router, where router.lua chooses the location as NGINX would. Adding, changing or removing such a host never reloads NGINX. renderer.dynamicServer is the one place that decides; any other feature keeps the host's server block (so does a proxy-body-size above the ConfigMap's, which NGINX applies to chunked bodies while reading them), as do exact hosts a wildcard covers (NGINX would pick the wildcard's server over the catch-all), server-alias, ssl-passthrough, ssl-reject-handshake, and TLS settings of an Ingress without a host.",
		busTypes:  []string{"bus.Server"},
		tables:    []string{"renderer.route.<host> (the route: locations in NGINX's order)"},
		renderer:  []string{"stages/renderer.dynamicServer", "stages/renderer.newLuaRoute", "stages/renderer.Renderer.renderServerOrRoute", "stages/renderer.Renderer.coveredByWildcard", "stages/renderer.routedAccess"},
		applier:   []string{"stages/applier.Stage.pushRoutes", "stages/applier.keptRoutes", "stages/applier.namedDelta"},
		templates: []string{"templates/server.conf.tmpl"},
		lua:       []string{"lua/switchyard/router.lua", "lua/switchyard/balancer.lua", "lua/switchyard/util/backend_store.lua", "lua/switchyard/configuration.lua", "lua/switchyard/util/cidr.lua"},
		testdata:  []string{"stages/renderer/testdata/lua-routing.model.json", "stages/renderer/testdata/lua-routing-access.model.json", "stages/renderer/testdata/lua-routing-access-unreadable.model.json"},
		tests: []string{"stages/renderer.TestDynamicServer", "integration.TestLuaRoutingAnswersAsServerBlocks", "integration.TestLuaRoutedHostNeedsNoReload", "integration.TestProxySettingsThroughNginx", "integration.TestPermanentAndTemporalRedirect", "integration.TestRewriteTargetAndRegexPaths", "integration.TestCORSThroughNginx", "stages/applier.TestRoutesDeltaAndKeptRoutes", "lua.dataPlane.testRoutesEndpoint",
			"lua.dataPlane.testAccessAgreesWithNginx", "integration.TestLuaRoutedSourceRanges", "integration.TestSourceRangesBehindProxyProtocol", "integration.TestSourceRangesThroughNginx", "integration.TestGlobalAccessThroughNginx", "integration.TestRealIPThroughNginx"},
	},
	{
		name: "Request traces", summary: "enable-opentelemetry, opentelemetry-trust-incoming-span and opentelemetry-operation-name (annotations over the ConfigMap's keys of the same names), done in Lua as Debian has no OpenTelemetry module: a traced location continues the client's W3C traceparent (when trusted) or starts a trace, sends traceparent upstream, and, when the otel-sampler* keys sample it, records a span with the HTTP, upstream and Ingress attributes into a bounded shared dict (otel-max-queuesize; drops counted in switchyard_request_spans_dropped_total); the process that runs NGINX drains it every otel-schedule-delay-millis and exports over OTLP/gRPC to otlp-collector-host:port (else --otlp-endpoint) as otel-service-name. Rendered only when there is a collector.",
		plugin: "opentelemetry", keys: []string{"enable-opentelemetry", "opentelemetry-trust-incoming-span", "opentelemetry-operation-name"},
		busTypes:   []string{"bus/features.Tracing", "bus.TracingSettings"},
		tables:     []string{"annotations.server.<host> (locations[].features.tracing)", "translator.config.controller (the otel keys)"},
		translator: []string{"stages/translator.parseCollectorHost", "stages/translator.parseRatio"},
		renderer:   []string{"stages/renderer.tracingInit", "stages/renderer.locationTracing"},
		templates:  []string{"templates/nginx.conf.tmpl", "templates/server.conf.tmpl"},
		lua:        []string{"lua/switchyard/tracing.lua"},
		testdata:   []string{"stages/renderer/testdata/tracing.model.json"},
		tests: []string{"plugins/builtin/opentelemetry.TestParse", "plugins/builtin/opentelemetry.FuzzOperationName", "stages/renderer.TestLocationTracing",
			"stages/renderer.TestTracingInit", "lua.dataPlane.testTracing", "lua.dataPlane.testTraceQueueFull", "lua.dataPlane.testTraceSamplers",
			"internal/otelexport.TestRequestSpansExported", "integration.TestRequestTraceExported"},
	},
	{
		name: "Refusals by NGINX", summary: "A line NGINX refuses is traced by its \"# source\" comment to its Ingress or ConfigMap key; that Ingress is left out (or the key falls back to its default) until it changes.",
		busTypes:  []string{"bus.Refusal", "bus.RefusalTable"},
		tables:    []string{"refusals.ingress.<ns>.<name>", "refusals.configmap.<key>"},
		renderer:  []string{"stages/renderer.Renderer.SetRefusal", "stages/renderer.Renderer.ingressSource", "stages/renderer.Renderer.refusedLines"},
		applier:   []string{"stages/applier.attribute", "stages/applier.Stage.refused"},
		templates: []string{"templates/nginx.conf.tmpl", "templates/server.conf.tmpl"},
		tests:     []string{"stages/renderer.TestRefusals", "integration.TestIngressNginxRefuses", "integration.TestConfigMapValuesNginxRefusesAtStart"},
	},
}

// TestFeatureMapIsCurrent keeps docs/features.md equal to what the map
// above generates, and checks the map: every symbol and file it names
// exists, and every annotation of every built-in plugin is in a feature of
// its plugin. Run with -update to rewrite the file.
func TestFeatureMapIsCurrent(t *testing.T) {
	got, problems := writeFeatureMap()
	for _, p := range problems {
		t.Error(p)
	}
	const path = "docs/features.md"
	if *updateDocs && len(problems) == 0 {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not current; run: go test -run TestFeatureMapIsCurrent -update .", path)
	}
}

// writeFeatureMap renders docs/features.md, with what it could not find.
func writeFeatureMap() ([]byte, []string) {
	var problems []string
	idx := symbolIndex{}
	checkKeys(&problems)
	var b bytes.Buffer
	b.WriteString("# Feature map\n\nGenerated by `go test -run TestFeatureMapIsCurrent -update .` from the map in features_doc_test.go: " +
		"where each feature lives, stage by stage (watcher → translator → annotations → renderer → applier, DESIGN.md). " +
		"Annotation keys take the prefix `" + bus.DefaultAnnotationsPrefix + "/`; their patterns and meaning are in annotations.md. " +
		"Tables are below `" + bus.Root + ".`; \"x.y\" in Go code is a function or type y of package x, \"x.T.m\" a method.\n\n")
	for _, f := range features {
		fmt.Fprintf(&b, "- [%s](#%s)\n", f.name, anchor(f.name))
	}
	for _, f := range features {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| Part | Where |\n|---|---|\n", f.name, f.summary)
		if f.plugin != "" {
			row(&b, "Plugin", []string{code(f.plugin) + " " + idx.where("plugins/builtin/"+f.plugin+".New", &problems)})
			row(&b, "Annotations", mapStrings(f.keys, code))
		}
		row(&b, "Bus types", idx.symbols("", f.busTypes, &problems))
		checkTables(f.tables, &problems)
		row(&b, "Tables", mapStrings(f.tables, code))
		row(&b, "Translator", idx.symbols("", f.translator, &problems))
		row(&b, "Annotations stage", idx.symbols("", f.annotations, &problems))
		row(&b, "Renderer", idx.symbols("", f.renderer, &problems))
		row(&b, "Templates", files(f.templates, &problems))
		row(&b, "Applier", idx.symbols("", f.applier, &problems))
		row(&b, "Lua", files(f.lua, &problems))
		row(&b, "Golden inputs", files(f.testdata, &problems))
		row(&b, "Tests", idx.symbols("", f.tests, &problems))
	}
	return b.Bytes(), problems
}

// checkKeys checks each feature's keys against its plugin's description,
// and that no key of a built-in plugin is left out of the map.
func checkKeys(problems *[]string) {
	mapped := map[string]string{}
	for _, f := range features {
		for _, k := range f.keys {
			mapped[k] = f.plugin
		}
	}
	for _, d := range builtin.Descriptions() {
		for _, a := range d.Annotations {
			switch owner, ok := mapped[a.Key]; {
			case !ok:
				*problems = append(*problems, fmt.Sprintf("annotation %s of plugin %s is in no feature", a.Key, d.Name))
			case owner != d.Name:
				*problems = append(*problems, fmt.Sprintf("annotation %s is mapped to plugin %s, but %s owns it", a.Key, owner, d.Name))
			}
			delete(mapped, a.Key)
		}
	}
	for k, owner := range mapped {
		*problems = append(*problems, fmt.Sprintf("annotation %s: plugin %s declares no such key", k, owner))
	}
}

// checkTables checks that each table key starts with a table (a stage's,
// or the refusals') and a kind the bus defines.
func checkTables(tables []string, problems *[]string) {
	kinds := []string{bus.KindObject, bus.KindServer, bus.KindBackend, bus.KindCertificate, bus.KindIngress,
		bus.KindFile, bus.KindFilePart, bus.KindConfig, bus.KindSecret, bus.KindStream, bus.KindRoute, bus.KindPassthrough, bus.RefusedIngress, bus.RefusedConfigMap, bus.RefusedServices}
	for _, t := range tables {
		table, rest, _ := strings.Cut(t, ".")
		kind, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(append(slices.Clone(bus.Stages), bus.TableRefusals), table) || !slices.Contains(kinds, kind) {
			*problems = append(*problems, fmt.Sprintf("table key %q: no table %q with kind %q on the bus", t, table, kind))
		}
	}
}

func row(b *bytes.Buffer, part string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(b, "| %s | %s |\n", part, strings.Join(items, "<br>"))
	}
}

func code(s string) string { return "`" + strings.ReplaceAll(s, "|", `\|`) + "`" }

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// anchor is GitHub's heading anchor for the map's headings.
func anchor(heading string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(heading) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		case c == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// files links each path (relative to the repository) from docs/.
func files(paths []string, problems *[]string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			*problems = append(*problems, fmt.Sprintf("file %s: %v", p, err))
		}
		out = append(out, link(p))
	}
	return out
}

func link(path string) string { return "[" + path + "](../" + path + ")" }

// symbolIndex maps a package directory to its top-level names ("F",
// "T", "T.m"), each to the file that declares it; tests included.
type symbolIndex map[string]map[string]string

func (idx symbolIndex) symbols(prefix string, names []string, problems *[]string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, code(prefix+n)+" "+idx.where(prefix+n, problems))
	}
	return out
}

// where is the link to the file declaring sym ("dir.Name"), or a problem.
func (idx symbolIndex) where(sym string, problems *[]string) string {
	slash := strings.LastIndex(sym, "/")
	dot := strings.Index(sym[slash+1:], ".") + slash + 1
	if dot == slash {
		*problems = append(*problems, fmt.Sprintf("%s: not dir.Name", sym))
		return ""
	}
	dir, name := sym[:dot], sym[dot+1:]
	if idx[dir] == nil {
		idx[dir] = parseDir(dir)
	}
	file, ok := idx[dir][name]
	if !ok {
		*problems = append(*problems, fmt.Sprintf("%s: no %s in %s", sym, name, dir))
		return ""
	}
	return "(" + link(file) + ")"
}

func parseDir(dir string) map[string]string {
	names := map[string]string{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	slices.Sort(paths)
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, decl := range f.Decls {
			for _, name := range declNames(decl) {
				if _, seen := names[name]; !seen {
					names[name] = path
				}
			}
		}
	}
	return names
}

func declNames(decl ast.Decl) []string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			return []string{d.Name.Name}
		}
		return []string{recvName(d.Recv.List[0].Type) + "." + d.Name.Name}
	case *ast.GenDecl:
		var out []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
		return out
	}
	return nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
