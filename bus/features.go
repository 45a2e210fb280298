package bus

import "switchyard.dev/switchyard/bus/features"

// The typed features annotation plugins return are defined in bus/features,
// a leaf package that imports the standard library only, so that a plugin
// built against the SDK (which re-exports them) links neither NATS nor
// client-go. They are part of the bus contract all the same: bus re-exports
// every name, and the stages keep writing bus.Features, bus.Canary, ….
// Aliases carry the methods (Validate, Merge, …) along.

// Feature types.
type (
	Features              = features.Features
	Deny                  = features.Deny
	Header                = features.Header
	Canary                = features.Canary
	TrafficShapingPolicy  = features.TrafficShapingPolicy
	Auth                  = features.Auth
	BasicAuth             = features.BasicAuth
	ExternalAuth          = features.ExternalAuth
	AuthKeepalive         = features.AuthKeepalive
	RateLimit             = features.RateLimit
	Redirect              = features.Redirect
	Rewrite               = features.Rewrite
	Proxy                 = features.Proxy
	Upstream              = features.Upstream
	Access                = features.Access
	UpstreamTLS           = features.UpstreamTLS
	Balancing             = features.Balancing
	ServerFeatures        = features.Server
	Logs                  = features.Logs
	Errors                = features.Errors
	CORS                  = features.CORS
	ClientAuth            = features.ClientAuth
	Mirror                = features.Mirror
	GlobalAuth            = features.GlobalAuth
	Passthrough           = features.Passthrough
	ModSecurity           = features.ModSecurity
	Tracing               = features.Tracing
	UpstreamHashByConfig  = features.UpstreamHashByConfig
	SessionAffinityConfig = features.SessionAffinityConfig
	CookieSessionAffinity = features.CookieSessionAffinity
	RegexDialect          = features.RegexDialect
)

// Load-balance and affinity values (the Lua balancer's).
const (
	LoadBalanceRoundRobin       = features.LoadBalanceRoundRobin
	LoadBalanceEWMA             = features.LoadBalanceEWMA
	LoadBalanceCHash            = features.LoadBalanceCHash
	LoadBalanceCHashSubset      = features.LoadBalanceCHashSubset
	LoadBalanceStickyBalanced   = features.LoadBalanceStickyBalanced
	LoadBalanceStickyPersistent = features.LoadBalanceStickyPersistent
	AffinityCookie              = features.AffinityCookie
	AffinityModeBalanced        = features.AffinityModeBalanced
	AffinityModePersistent      = features.AffinityModePersistent
	DefaultSessionCookieName    = features.DefaultSessionCookieName
	DefaultHashBySubsetSize     = features.DefaultHashBySubsetSize
)

// Limits of feature values.
const (
	MaxAllowlist         = features.MaxAllowlist
	MaxBurstMultiplier   = features.MaxBurstMultiplier
	MaxCanaryWeightTotal = features.MaxCanaryWeightTotal
	MaxConnectionLimit   = features.MaxConnectionLimit
	MaxHtpasswdUsers     = features.MaxHtpasswdUsers
	MaxRateKB            = features.MaxRateKB
	MaxRateLimit         = features.MaxRateLimit
)

// The safe regex grammar (features/regex_safe.go).
const (
	RegexPath         = features.RegexPath
	RegexHeader       = features.RegexHeader
	MaxRegexPathLen   = features.MaxRegexPathLen
	MaxRegexHeaderLen = features.MaxRegexHeaderLen
	MaxRegexRepeat    = features.MaxRegexRepeat
	MaxRegexUnbounded = features.MaxRegexUnbounded
	MaxRegexAmbiguous = features.MaxRegexAmbiguous
	MaxRegexChoices   = features.MaxRegexChoices
)

// Whole-string patterns of feature values.
var (
	AuthMethodPattern    = features.AuthMethodPattern
	AuthRealmPattern     = features.AuthRealmPattern
	AuthURLPattern       = features.AuthURLPattern
	AuthRedirectPattern  = features.AuthRedirectPattern
	RedirectURLPattern   = features.RedirectURLPattern
	RegexPathPattern     = features.RegexPathPattern
	RewriteTargetPattern = features.RewriteTargetPattern
	URIPathPattern       = features.URIPathPattern
	ServiceNamePattern   = features.ServiceNamePattern
)

// ParseSafeRegex checks that p is in the safe grammar of dialect d; see
// features.ParseSafeRegex.
func ParseSafeRegex(p string, d RegexDialect) error { return features.ParseSafeRegex(p, d) }

// CheckRegexPath checks a use-regex location path; see
// features.CheckRegexPath.
func CheckRegexPath(path string) error { return features.CheckRegexPath(path) }

// ValidateCanaryPattern checks a canary-by-header-pattern; see
// features.ValidateCanaryPattern.
func ValidateCanaryPattern(p string) error { return features.ValidateCanaryPattern(p) }
