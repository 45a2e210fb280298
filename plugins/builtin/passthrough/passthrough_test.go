package passthrough

import (
	"reflect"
	"regexp"
	"testing"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

func TestParse(t *testing.T) {
	on := &features.Passthrough{Enabled: true}
	cases := []struct {
		in   map[string]string
		want *features.Passthrough
		errs int
	}{
		{map[string]string{}, nil, 0},
		{map[string]string{KeySSLPassthrough: "true"}, on, 0},
		{map[string]string{KeySSLPassthrough: "True"}, on, 0},
		{map[string]string{KeySSLPassthrough: "1"}, on, 0},
		{map[string]string{KeySSLPassthrough: "false"}, nil, 0},
		{map[string]string{KeySSLPassthrough: "0"}, nil, 0},
		{map[string]string{KeySSLPassthrough: "yes"}, nil, 1},
		{map[string]string{KeySSLPassthrough: ""}, nil, 1},
	}
	for _, c := range cases {
		got, errs := Parse(c.in)
		if !reflect.DeepEqual(got, c.want) || len(errs) != c.errs {
			t.Errorf("%v: got %+v, %v; want %+v, %d errors", c.in, got, errs, c.want, c.errs)
		}
	}
}

func TestDescribe(t *testing.T) {
	d := Plugin{}.Describe()
	if len(d.Annotations) != 1 || d.Annotations[0].Key != KeySSLPassthrough || d.Annotations[0].Risk != plugins.RiskLow {
		t.Fatalf("description: %+v", d.Annotations)
	}
}

// FuzzParse: Parse never panics, returns a group exactly when the value is
// a true boolean, and what it returns passes the host's check.
func FuzzParse(f *testing.F) {
	f.Add("true")
	f.Add("false")
	f.Add("x")
	truth := regexp.MustCompile(`^(1|t|T|TRUE|true|True)$`)
	f.Fuzz(func(t *testing.T, v string) {
		got, errs := Parse(map[string]string{KeySSLPassthrough: v})
		if (got != nil) != truth.MatchString(v) {
			t.Fatalf("%q: got %+v", v, got)
		}
		if got != nil && len(errs) > 0 {
			t.Fatalf("%q: a group and errors", v)
		}
		if err := (&features.Features{Passthrough: got}).Validate(); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
	})
}
