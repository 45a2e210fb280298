package bus

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBackendValidate(t *testing.T) {
	sticky := func(c CookieSessionAffinity) *Backend {
		return &Backend{Name: "b", SessionAffinityConfig: &SessionAffinityConfig{Name: "cookie", Mode: "balanced", CookieSessionAffinity: c}}
	}
	hash := func(h UpstreamHashByConfig) *Backend { return &Backend{Name: "b", UpstreamHashByConfig: &h} }
	tests := []struct {
		name string
		b    *Backend
		bad  string // substring of the error; "" = valid
	}{
		{"nothing set", &Backend{Name: "b"}, ""},
		{"every load-balance", &Backend{LoadBalance: "sticky_persistent"}, ""},
		{"unknown load-balance", &Backend{LoadBalance: "least_conn"}, "load-balance"},
		{"hash by uri", hash(UpstreamHashByConfig{UpstreamHashBy: "$request_uri"}), ""},
		{"hash by compound", hash(UpstreamHashByConfig{UpstreamHashBy: "$host$request_uri-$cookie_user_id", Subset: true, SubsetSize: 5}), ""},
		{"hash by braces", hash(UpstreamHashByConfig{UpstreamHashBy: "${request_uri}"}), "upstream-hash-by"},
		{"hash by lone dollar", hash(UpstreamHashByConfig{UpstreamHashBy: "$"}), "upstream-hash-by"},
		{"hash by dash name", hash(UpstreamHashByConfig{UpstreamHashBy: "$cookie_a;b"}), "upstream-hash-by"},
		{"hash by blank", hash(UpstreamHashByConfig{UpstreamHashBy: "$host $uri"}), "upstream-hash-by"},
		{"hash by too long", hash(UpstreamHashByConfig{UpstreamHashBy: strings.Repeat("$a", 200)}), "upstream-hash-by"},
		{"subset without hash", hash(UpstreamHashByConfig{Subset: true}), "without upstream-hash-by"},
		{"subset size negative", hash(UpstreamHashByConfig{UpstreamHashBy: "$uri", SubsetSize: -1}), "subset-size"},
		{"subset size huge", hash(UpstreamHashByConfig{UpstreamHashBy: "$uri", SubsetSize: 5000}), "subset-size"},
		{"full cookie", sticky(CookieSessionAffinity{Name: "route", Path: "/app", Domain: ".example.com", Expires: "3600",
			MaxAge: "60", SameSite: "Strict", Secure: true, ConditionalSameSiteNone: true, ChangeOnFailure: true}), ""},
		{"defaults", sticky(CookieSessionAffinity{}), ""},
		{"name with blank", sticky(CookieSessionAffinity{Name: "a b"}), "name"},
		{"name with semicolon", sticky(CookieSessionAffinity{Name: "a;Secure"}), "name"},
		{"path with semicolon", sticky(CookieSessionAffinity{Path: "/a; Domain=evil.test"}), "path"},
		{"path relative", sticky(CookieSessionAffinity{Path: "app"}), "path"},
		{"path newline", sticky(CookieSessionAffinity{Path: "/a\nX: y"}), "path"},
		{"domain with semicolon", sticky(CookieSessionAffinity{Domain: "a.com;x"}), "domain"},
		{"domain empty label", sticky(CookieSessionAffinity{Domain: "a..com"}), "domain"},
		{"expires not a number", sticky(CookieSessionAffinity{Expires: "1h"}), "expires"},
		{"maxage negative", sticky(CookieSessionAffinity{MaxAge: "-1"}), "maxage"},
		{"samesite lowercase", sticky(CookieSessionAffinity{SameSite: "lax"}), "samesite"},
		{"samesite other", sticky(CookieSessionAffinity{SameSite: "Lax; x"}), "samesite"},
		{"affinity type", &Backend{SessionAffinityConfig: &SessionAffinityConfig{Name: "header"}}, "only \"cookie\""},
		{"affinity mode", &Backend{SessionAffinityConfig: &SessionAffinityConfig{Name: "cookie", Mode: "sticky"}}, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			switch {
			case tt.bad == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.bad != "" && err == nil:
				t.Errorf("accepted, want an error about %s", tt.bad)
			case tt.bad != "" && !strings.Contains(err.Error(), tt.bad):
				t.Errorf("error %q does not mention %q", err, tt.bad)
			}
		})
	}
}

// The JSON is what Lua reads: it must keep ingress-nginx's field names.
func TestBackendBalancingJSON(t *testing.T) {
	b := &Backend{Name: "b", LoadBalance: "ewma",
		UpstreamHashByConfig: &UpstreamHashByConfig{UpstreamHashBy: "$uri", Subset: true, SubsetSize: 4},
		SessionAffinityConfig: &SessionAffinityConfig{Name: "cookie", Mode: "persistent", CookieSessionAffinity: CookieSessionAffinity{
			Name: "n", Expires: "1", MaxAge: "2", Path: "/p", Domain: "d", Secure: true, SameSite: "Lax",
			ConditionalSameSiteNone: true, ChangeOnFailure: true}}}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"load-balance":"ewma"`, `"upstreamHashByConfig":{"upstream-hash-by":"$uri","upstream-hash-by-subset":true,"upstream-hash-by-subset-size":4}`,
		`"sessionAffinityConfig":{"name":"cookie","mode":"persistent","cookieSessionAffinity":{"name":"n","expires":"1","maxage":"2","path":"/p","domain":"d","secure":true,"samesite":"Lax","conditional_samesite_none":true,"change_on_failure":true}}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s lacks %s", data, want)
		}
	}
	plain, _ := json.Marshal(&Backend{Name: "b"})
	if strings.Contains(string(plain), "upstreamHashByConfig") || strings.Contains(string(plain), "sessionAffinityConfig") {
		t.Errorf("unset settings appear in %s", plain)
	}
}

// FuzzValidateBackendBalancing: whatever Validate accepts cannot carry a
// character that ends a cookie attribute, a header line or an expression.
func FuzzValidateBackendBalancing(f *testing.F) {
	f.Add("$request_uri", "route", "/app", ".example.com", "Lax", "3600")
	f.Add("${x}", "a b", "/a;b", "a..b", "lax", "-1")
	f.Fuzz(func(t *testing.T, hashBy, name, path, domain, sameSite, seconds string) {
		b := &Backend{Name: "b",
			UpstreamHashByConfig: &UpstreamHashByConfig{UpstreamHashBy: hashBy},
			SessionAffinityConfig: &SessionAffinityConfig{Name: "cookie", CookieSessionAffinity: CookieSessionAffinity{
				Name: name, Path: path, Domain: domain, SameSite: sameSite, Expires: seconds, MaxAge: seconds}}}
		if b.Validate() != nil {
			return
		}
		// A comma may join the parts of a hash key ("$host,$uri"): Lua
		// reads the key, no cookie or header carries it.
		if strings.ContainsAny(hashBy, "; \"\\\r\n\t{}") {
			t.Fatalf("accepted upstream-hash-by %q", hashBy)
		}
		for _, v := range []string{name, path, domain, sameSite, seconds} {
			if strings.ContainsAny(v, "; ,\"\\\r\n\t{}") {
				t.Fatalf("accepted %q", v)
			}
		}
		// Every "$" starts a variable name the Lua side can read.
		for i := 0; i < len(hashBy); i++ {
			if hashBy[i] == '$' && (i+1 == len(hashBy) || !isNameByte(hashBy[i+1])) {
				t.Fatalf("accepted %q: \"$\" without a name", hashBy)
			}
		}
		if strings.Contains(name, "=") {
			t.Fatalf("accepted cookie name %q", name)
		}
	})
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
