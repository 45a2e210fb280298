// Package lua embeds the Lua modules that run inside NGINX, so the applier
// can install them into its NGINX prefix and one binary carries everything.
//
// The modules are in folders by concern, and a module's require name is
// its path: switchyard/balancers/ewma.lua is switchyard.balancers.ewma.
//
//   - switchyard/: what nginx.conf calls, one module a phase: balancer
//     (balancer_by_lua and the per-request hooks, canary), configuration
//     (the control endpoint), certificate (SNI), ingress (ssl-redirect,
//     HSTS, www redirect).
//   - switchyard/balancers/: the load-balance algorithms (round_robin,
//     ewma, chash, chashsubset), each one interface (round_robin.lua).
//   - switchyard/affinity/: cookie session affinity (sticky, the common
//     part; balanced and persistent, the affinity modes).
//   - switchyard/util/: what several of them share (snapshot, the
//     versioned shared-dict store; chash_ring; endpoints; cidr, the
//     IPv4 and IPv6 matcher of the source ranges router.lua checks).
//
// The Go tests beside this file run them in a real NGINX, one file per
// concern (dataplane_test.go starts it).
package lua

import "embed"

// FS holds switchyard/**/*.lua; they are installed below <prefix>/lua/.
//
//go:embed switchyard/*.lua switchyard/*/*.lua
var FS embed.FS
