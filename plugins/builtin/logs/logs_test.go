package logs

import (
	"reflect"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   map[string]string
		want *features.Logs
		errs int
	}{
		{map[string]string{}, nil, 0},
		{map[string]string{KeyEnableAccessLog: "true"}, nil, 0},
		{map[string]string{KeyEnableAccessLog: "false"}, &features.Logs{AccessLogOff: true}, 0},
		{map[string]string{KeyEnableRewriteLog: "True"}, &features.Logs{RewriteLog: true}, 0},
		{map[string]string{KeyEnableAccessLog: "0", KeyEnableRewriteLog: "1"}, &features.Logs{AccessLogOff: true, RewriteLog: true}, 0},
		{map[string]string{KeyEnableAccessLog: "no"}, nil, 1},
	}
	for _, c := range cases {
		got, errs := Parse(c.in)
		if !reflect.DeepEqual(got, c.want) || len(errs) != c.errs {
			t.Errorf("%v: got %+v, %v; want %+v, %d errors", c.in, got, errs, c.want, c.errs)
		}
	}
}

// FuzzParse: Parse never panics and errs exactly when a value is not a
// boolean.
func FuzzParse(f *testing.F) {
	f.Add("false", "true")
	f.Add("x", "")
	f.Fuzz(func(t *testing.T, access, rewrite string) {
		got, errs := Parse(map[string]string{KeyEnableAccessLog: access, KeyEnableRewriteLog: rewrite})
		if len(errs) == 0 && got != nil && !got.AccessLogOff && !got.RewriteLog {
			t.Fatalf("empty group returned: %+v", got)
		}
	})
}
