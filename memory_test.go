package main

import (
	"math"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	good := map[string]int64{
		"240MiB": 240 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "1TiB": 1 << 40,
		"1000B": 1000, "268435456": 268435456, "off": math.MaxInt64,
	}
	for in, want := range good {
		if got, err := parseMemoryLimit(in); err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "0", "240MB", "1.5GiB", "9000000TiB", "240 MiB"} {
		if got, err := parseMemoryLimit(in); err == nil {
			t.Errorf("parseMemoryLimit(%q) = %d, want an error", in, got)
		}
	}
	if _, err := parseMemoryLimit(defaultMemoryLimit); err != nil {
		t.Errorf("the default does not parse: %v", err)
	}
}
