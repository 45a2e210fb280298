package errors

import (
	"reflect"
	"regexp"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]string
		want *features.Errors
		errs int
	}{
		{"none", map[string]string{}, nil, 0},
		{"one code", map[string]string{KeyCustomHTTPErrors: "503"}, &features.Errors{Codes: []int{503}}, 0},
		{"sorted, blanks, repeats once", map[string]string{KeyCustomHTTPErrors: "503, 404,503"}, &features.Errors{Codes: []int{404, 503}}, 0},
		{"bounds", map[string]string{KeyCustomHTTPErrors: "400,599"}, &features.Errors{Codes: []int{400, 599}}, 0},
		{"below 400", map[string]string{KeyCustomHTTPErrors: "399"}, nil, 1},
		{"above 599", map[string]string{KeyCustomHTTPErrors: "600"}, nil, 1},
		{"empty item", map[string]string{KeyCustomHTTPErrors: "404,"}, nil, 1},
		{"empty", map[string]string{KeyCustomHTTPErrors: ""}, nil, 1},
		{"leading zero", map[string]string{KeyCustomHTTPErrors: "0404"}, nil, 1},
		{"sign", map[string]string{KeyCustomHTTPErrors: "+404"}, nil, 1},
		{"default backend", map[string]string{KeyDefaultBackend: "errors"}, &features.Errors{DefaultBackend: "errors"}, 0},
		{"both", map[string]string{KeyDefaultBackend: "err-pages", KeyCustomHTTPErrors: "404"},
			&features.Errors{Codes: []int{404}, DefaultBackend: "err-pages"}, 0},
		{"namespaced default backend", map[string]string{KeyDefaultBackend: "other/errors"}, nil, 1},
		{"upper case", map[string]string{KeyDefaultBackend: "Errors"}, nil, 1},
		{"both bad", map[string]string{KeyDefaultBackend: "a;b", KeyCustomHTTPErrors: "x"}, nil, 2},
	}
	for _, c := range cases {
		got, errs := Parse(c.in)
		if !reflect.DeepEqual(got, c.want) || len(errs) != c.errs {
			t.Errorf("%s: got %+v, %v; want %+v, %d errors", c.name, got, errs, c.want, c.errs)
		}
		if err := (&features.Features{Errors: got}).Validate(); err != nil {
			t.Errorf("%s: result fails Validate: %v", c.name, err)
		}
	}
}

// TestPatternsAdmitWhatParseAccepts: the host's whole-string patterns
// never refuse a value Parse would take.
func TestPatternsAdmitWhatParseAccepts(t *testing.T) {
	patterns := map[string]*regexp.Regexp{}
	for _, a := range (Plugin{}).Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	for key, v := range map[string]string{KeyCustomHTTPErrors: "404, 503,599", KeyDefaultBackend: "my-errors"} {
		if !patterns[key].MatchString(v) {
			t.Errorf("%s: pattern refuses %q", key, v)
		}
		if _, errs := Parse(map[string]string{key: v}); len(errs) > 0 {
			t.Errorf("%s: Parse refuses %q: %v", key, v, errs)
		}
	}
}

// FuzzParseErrorCodes: the code-list parser never panics, and whatever it
// accepts is sorted, without repeats, from 400 to 599, and passes Validate.
func FuzzParseErrorCodes(f *testing.F) {
	for _, s := range []string{"404", "503,404", " 500 , 502", "404,", "", "4040", "-404", "599,400,400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		codes, err := features.ParseErrorCodes(s)
		if err != nil {
			return
		}
		if len(codes) == 0 {
			t.Fatalf("%q: no codes and no error", s)
		}
		if err := (&features.Features{Errors: &features.Errors{Codes: codes}}).Validate(); err != nil {
			t.Fatalf("%q: accepted %v, which Validate refuses: %v", s, codes, err)
		}
	})
}
