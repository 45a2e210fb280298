package renderer

import (
	"fmt"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// corsView is a location's CORS policy as the Lua literals switchyard.cors
// takes (lua/switchyard/cors.lua): Origins for rewrite, FilterArgs (the
// origins first) for header_filter.
type corsView struct {
	Origins, FilterArgs string
}

// newCORSView checks the policy again (Validate) and writes it as Lua
// literals; nil without CORS.
func newCORSView(f *bus.Features) (*corsView, error) {
	if f == nil || f.CORS == nil {
		return nil, nil
	}
	if err := (&bus.Features{CORS: f.CORS}).Validate(); err != nil {
		return nil, err
	}
	c := f.CORS
	var literals []string
	for _, s := range []string{strings.Join(c.Origins, " "), c.Methods, c.Headers, c.ExposeHeaders} {
		l, err := luaString(s)
		if err != nil {
			return nil, fmt.Errorf("cors: %w", err)
		}
		literals = append(literals, l)
	}
	literals = append(literals, strconv.FormatBool(c.Credentials), strconv.Itoa(c.MaxAge))
	return &corsView{Origins: literals[0], FilterArgs: strings.Join(literals, ", ")}, nil
}
