package renderer

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
)

// mirrorView is a location's mirror (mirror plugin): the mirror directive
// in the location and the internal location it names, values checked
// again and quoted.
type mirrorView struct {
	// URI is the internal location's path, unique in the server.
	URI string
	// Target (quoted, with its variables) and Host (quoted).
	Target, Host string
	NoBody       bool
}

// newMirrorView resolves the mirror of location i; nil without one.
func newMirrorView(i int, f *bus.Features) (*mirrorView, error) {
	if f == nil || f.Mirror == nil {
		return nil, nil
	}
	if err := (&bus.Features{Mirror: f.Mirror}).Validate(); err != nil {
		return nil, err
	}
	v := &mirrorView{URI: fmt.Sprintf("/_switchyard_mirror_%d", i), NoBody: f.Mirror.NoBody}
	var err error
	if v.Target, err = quoteVariables(f.Mirror.Target); err != nil {
		return nil, err
	}
	if v.Host, err = quote(f.Mirror.Host); err != nil {
		return nil, err
	}
	return v, nil
}
