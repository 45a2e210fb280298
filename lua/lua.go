// Package lua embeds the Lua modules that run inside NGINX, so the applier
// can install them into its NGINX prefix and one binary carries everything.
package lua

import "embed"

// FS holds switchyard/*.lua; they are installed below <prefix>/lua/.
//
//go:embed switchyard/*.lua
var FS embed.FS
