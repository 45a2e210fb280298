package bus

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads an NGINX size ("64m", "512k", "1g", "4096") in bytes. The
// renderer writes sizes this way and the applier reads them back (the Lua
// dict sizes of nginx.conf).
func ParseSize(s string) (int64, error) {
	unit := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "k"):
		unit, num = 1<<10, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		unit, num = 1<<20, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "g"):
		unit, num = 1<<30, strings.TrimSuffix(s, "g")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number with k, m or g", s)
	}
	return n * unit, nil
}
