package pluginpb

// The go-plugin handshake both sides agree on, besides the gRPC service of
// annotations.proto. The SDK (package plugins) serves it; the host
// (internal/pluginhost) dials it. Changing any of these breaks every plugin
// built before.
const (
	// ProtocolVersion is the wire protocol's version. A breaking change to
	// annotations.proto bumps it; the host then serves both versions side
	// by side (go-plugin's VersionedPlugins) until plugins built against
	// the old SDK are gone.
	ProtocolVersion = 1
	// MagicCookieKey and MagicCookieValue keep a plugin binary from being
	// run by hand (it would wait for a host forever).
	MagicCookieKey   = "SWITCHYARD_ANNOTATION_PLUGIN"
	MagicCookieValue = "f3b1c2a4-annotations"
	// ServiceName is the one service a plugin process serves (go-plugin's
	// dispense name).
	ServiceName = "annotations"
	// HostPIDEnv tells a plugin the pid of the host that launched it, so
	// that it can exit once that host is gone.
	HostPIDEnv = "SWITCHYARD_PLUGIN_HOST_PID"
	// PluginMetadataKey is the gRPC metadata that names the plugin a call
	// is for, when one process serves several (Switchyard's built-ins:
	// plugins.ServeSet). A process of one plugin ignores it.
	PluginMetadataKey = "switchyard-plugin"
)
