# Switchyard: `make run` to try it, `make test` before every push.
GO        ?= go
BIN       := bin/switchyard
# The built-in annotation plugins' own small binary, next to BIN, where
# switchyard looks for it (without it, switchyard serves them itself).
PLUGINS_BIN := $(dir $(BIN))switchyard-plugins
STATE_DIR ?= $(CURDIR)/.state
# A count, not a duration: Go 1.26's fuzz coordinator can fail a timed run
# at its deadline with no failing input (golang/go#75804, fixed in Go 1.27).
FUZZTIME  ?= 10000x
# Random regexes compiled by NGINX in make fuzz (make test's unit run: 300).
REGEX_DIFF_N ?= 5000
# Random CIDR/address pairs util/cidr.lua checks against Go's netip in make
# fuzz (make test's run: 5000).
CIDR_DIFF_N ?= 200000
# Debian's NGINX with the Lua module: the data plane.
DEB_PACKAGES := nginx libnginx-mod-http-lua libnginx-mod-http-ndk lua-resty-core \
                lua-resty-lrucache lua-cjson libnginx-mod-stream libnginx-mod-stream-js libnginx-mod-http-brotli-filter curl \
                libnginx-mod-http-modsecurity modsecurity-crs
# The Kubernetes test rig: Debian's etcd, and ip for network namespaces.
TEST_PACKAGES := etcd-server iproute2

.PHONY: all build run test unit server-blocks fuzz fuzz-targets lint deps test-deps kube-apiserver deploy-manifest bench clean proto

all: build

build:
	$(GO) build -o $(BIN) .
	$(GO) build -o $(PLUGINS_BIN) ./plugins/builtin/switchyard-plugins

## deps: install the Debian packages that are missing (idempotent).
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

## test-deps: what the tests need besides the data plane (idempotent).
test-deps: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(TEST_PACKAGES)"

## kube-apiserver: build it once from the Go module proxy into a cache
## outside the clone (a few minutes cold, nothing when cached).
kube-apiserver:
	GO=$(GO) integration/kube/build-apiserver.sh

## deploy-manifest: regenerate deploy/switchyard.yaml from the Helm chart
## (Helm's own engine, linked in; no helm binary needed).
deploy-manifest:
	GO=$(GO) deploy/helm/render.sh

## run: two echo backends and the all-in-one on 127.0.0.1:8080 / :8443.
run: deps build
	@BIN=$(BIN) STATE_DIR=$(STATE_DIR) examples/run.sh

## test: formatting, vet, every test with the real NGINX, and short fuzz runs.
test: test-deps kube-apiserver lint unit server-blocks fuzz-targets

unit:
	SWITCHYARD_REQUIRE_NGINX=1 $(GO) test -count=1 -timeout 20m ./...

## server-blocks: the routing and per-location tests again with every host in
## a server block of its own (--lua-routing=false); unit runs them, with
## everything else, with Lua routing, the default.
SERVER_BLOCK_TESTS = TestWildcardHostMatchesOneLabel|TestPathsFromSeveralIngressesLongestMatchWins|TestOlderIngressWinsAConflict|TestRulelessIngressIsTheCatchAll|TestSSLRedirectAndHSTS|TestControllerConfigMap|TestForwardedHeadersAndWebSocketUpgrade|TestCanaryRouting|TestRewriteTargetAndRegexPaths|TestAppRoot|TestForceSSLRedirectAndSSLRedirectOff|TestFromToWWWRedirect|TestBalancingThroughNginx|TestUnicodeHostsAreNotFolded|TestRequestMetricsThroughNginx|TestCustomHTTPErrors|TestTraceShowsEveryStage|TestRateLimitAnnotations|TestCORSThroughNginx|TestProxySettingsThroughNginx|TestPermanentAndTemporalRedirect|TestSourceRangesThroughNginx|TestSatisfyThroughNginx|TestGlobalAccessThroughNginx|TestRealIPThroughNginx|TestLuaRoutedSourceRanges|TestSourceRangesBehindProxyProtocol|TestAccessLogKeysThroughNginx|TestOriginalURIHeaderThroughNginx|TestForwardedHostHeaderThroughNginx
server-blocks:
	SWITCHYARD_TEST_ROUTING=server-blocks SWITCHYARD_REQUIRE_NGINX=1 $(GO) test -count=1 -timeout 20m -run '^($(SERVER_BLOCK_TESTS))$$' ./integration

## fuzz: every fuzz target, then more random regexes through NGINX and
## more random CIDRs through router.lua's matcher.
fuzz: fuzz-targets
	SWITCHYARD_REGEX_DIFF_N=$(REGEX_DIFF_N) SWITCHYARD_REQUIRE_NGINX=1 $(GO) test -count=1 -run '^TestRegexAgreesWithNginx$$' ./bus
	SWITCHYARD_CIDR_DIFF_N=$(CIDR_DIFF_N) SWITCHYARD_REQUIRE_NGINX=1 $(GO) test -count=1 -run '^TestDataPlane$$' ./lua

fuzz-targets:
	$(GO) test -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime $(FUZZTIME) ./internal/manifest
	$(GO) test -run '^$$' -fuzz '^FuzzNearest$$' -fuzztime $(FUZZTIME) ./internal/catalog
	$(GO) test -run '^$$' -fuzz '^FuzzValidateIngress$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzParseSettings$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzParseStreamEntry$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzParseHTTPSettings$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzCheckHeaders$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzCheckDHParam$$' -fuzztime $(FUZZTIME) ./stages/translator
	$(GO) test -run '^$$' -fuzz '^FuzzRenderServer$$' -fuzztime $(FUZZTIME) ./stages/renderer
	$(GO) test -run '^$$' -fuzz '^FuzzRenderRegexServer$$' -fuzztime $(FUZZTIME) ./stages/renderer
	$(GO) test -run '^$$' -fuzz '^FuzzAuthURLVariables$$' -fuzztime $(FUZZTIME) ./stages/renderer
	$(GO) test -run '^$$' -fuzz '^FuzzPassthroughStream$$' -fuzztime $(FUZZTIME) ./stages/renderer
	$(GO) test -run '^$$' -fuzz '^FuzzAttribute$$' -fuzztime $(FUZZTIME) ./stages/applier
	$(GO) test -run '^$$' -fuzz '^FuzzPassthroughValue$$' -fuzztime $(FUZZTIME) ./stages/applier
	$(GO) test -run '^$$' -fuzz '^FuzzEscapeToken$$' -fuzztime $(FUZZTIME) ./bus
	$(GO) test -run '^$$' -fuzz '^FuzzCheckEndpoint$$' -fuzztime $(FUZZTIME) ./internal/otelexport
	$(GO) test -run '^$$' -fuzz '^FuzzSplitFile$$' -fuzztime $(FUZZTIME) ./bus
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/canary
	$(GO) test -run '^$$' -fuzz '^FuzzParseHtpasswd$$' -fuzztime $(FUZZTIME) ./plugins/builtin/auth
	$(GO) test -run '^$$' -fuzz '^FuzzParseHeaderList$$' -fuzztime $(FUZZTIME) ./plugins/builtin/auth
	$(GO) test -run '^$$' -fuzz '^FuzzExternalAuthOptions$$' -fuzztime $(FUZZTIME) ./plugins/builtin/auth
	$(GO) test -run '^$$' -fuzz '^FuzzAuthCacheValues$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzParseSecRuleEngine$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzSplitSize$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzValidUpstreamVhost$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/authtls
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/mirror
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/modsecurity
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/access
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/cors
	$(GO) test -run '^$$' -fuzz '^FuzzParseErrorCodes$$' -fuzztime $(FUZZTIME) ./plugins/builtin/errors
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/ratelimit
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/redirect
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/rewrite
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/server
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/logs
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/passthrough
	$(GO) test -run '^$$' -fuzz '^FuzzCheckRegexPath$$' -fuzztime $(FUZZTIME) ./plugins/builtin/rewrite
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/balancing
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/proxy
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./plugins/builtin/upstream
	$(GO) test -run '^$$' -fuzz '^FuzzValidateBackendBalancing$$' -fuzztime $(FUZZTIME) ./bus
	$(GO) test -run '^$$' -fuzz '^FuzzParseSafeRegex$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzParseDump$$' -fuzztime $(FUZZTIME) ./internal/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzModelCertificate$$' -fuzztime $(FUZZTIME) ./internal/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzParseMapMatchList$$' -fuzztime $(FUZZTIME) ./bus/features
	$(GO) test -run '^$$' -fuzz '^FuzzOperationName$$' -fuzztime $(FUZZTIME) ./plugins/builtin/opentelemetry
	$(GO) test -run '^$$' -fuzz '^FuzzParseCIDRList$$' -fuzztime $(FUZZTIME) ./bus/features

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## bench: side-by-side measurements: pipeline latencies, incremental vs full
## translate+render, 10k Ingresses end to end, the Kubernetes API path.
bench: test-deps kube-apiserver build
	SWITCHYARD_BENCH=1 SWITCHYARD_REQUIRE_NGINX=1 $(GO) test -count=1 -run '^TestBench' -v -timeout 90m ./integration/bench ./lua

## proto: regenerate the plugin wire code (needs protoc, protoc-gen-go and
## protoc-gen-go-grpc; the generated code is committed, so builds never do).
proto:
	cd plugins/pluginpb && protoc --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative annotations.proto

clean:
	rm -rf bin $(STATE_DIR)
