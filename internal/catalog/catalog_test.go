package catalog

import "testing"

// ingress-nginx's generated annotations-risk.md has 136 annotations and 2
// aliases (whitelist-source-range, limit-whitelist).
func TestAnnotationCount(t *testing.T) {
	var canonical, aliases int
	for _, a := range Annotations() {
		if a.AliasOf != "" {
			aliases++
			continue
		}
		canonical++
		if a.Reason == "" {
			t.Errorf("%s has no reason", a.Name)
		}
	}
	if canonical != 136 || aliases != 2 {
		t.Fatalf("got %d names and %d aliases, want 136 and 2", canonical, aliases)
	}
	if a, ok := LookupAnnotation("whitelist-source-range"); !ok || a.AliasOf != "allowlist-source-range" {
		t.Fatalf("whitelist-source-range: %+v", a)
	}
}

func TestSnippetsAreRefused(t *testing.T) {
	for _, name := range []string{"configuration-snippet", "server-snippet", "stream-snippet", "auth-snippet", "modsecurity-snippet"} {
		if a, _ := LookupAnnotation(name); a.Status != Refused {
			t.Errorf("annotation %s: %q, want refused", name, a.Status)
		}
	}
	for _, name := range []string{"http-snippet", "server-snippet", "location-snippet", "main-snippet", "stream-snippet", "modsecurity-snippet"} {
		if k, _ := LookupKey(name); k.Status != Refused {
			t.Errorf("key %s: %q, want refused", name, k.Status)
		}
	}
}

func TestKeys(t *testing.T) {
	live := 0
	for _, k := range Keys() {
		if k.Status != Removed {
			live++
		}
		if k.Default == "" || k.Reason == "" {
			t.Errorf("%s: empty default or reason", k.Name)
		}
	}
	// configmap.md documents about 178 live keys; config.go has more.
	if live < 178 {
		t.Fatalf("%d live keys, want at least 178", live)
	}
}

func TestNearest(t *testing.T) {
	for in, want := range map[string]string{
		"proxy-bdy-size": "proxy-body-size", "canary-wieght": "canary-weight", "frobnicate": "",
		"auth-url": "auth-url", "": "",
	} {
		if got := Nearest(in); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzNearest: any key an Ingress may carry gives either no suggestion or
// a catalog name within two edits, and never panics.
func FuzzNearest(f *testing.F) {
	f.Add("proxy-bdy-size")
	f.Add("ünïcode-ßnippet")
	f.Fuzz(func(t *testing.T, name string) {
		got := Nearest(name)
		if got == "" {
			return
		}
		if _, ok := LookupAnnotation(got); !ok || distance(name, got) > 2 {
			t.Fatalf("Nearest(%q) = %q", name, got)
		}
	})
}
