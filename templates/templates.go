// Package templates holds the text/templates the renderer turns into
// nginx.conf and one file per server. They are embedded, so the binary
// carries them; the renderer is the only reader.
package templates

import "embed"

// FS holds every *.tmpl file of this folder.
//
//go:embed *.tmpl
var FS embed.FS
