package auth

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/plugintest"
)

const apr1 = "$apr1$abcdefgh$5VEbMkemELfbhC5ck.U.z1"

func TestDescribePatternsCompileAndRefuseInjection(t *testing.T) {
	hostile := []string{"x;y", "x}", "x{", `x"`, "x$y", "x\\y", "x\ny"}
	for _, a := range New().Describe().Annotations {
		re, err := regexp.Compile(`^(?:` + a.Pattern + `)$`)
		if err != nil {
			t.Fatalf("%s: %v", a.Key, err)
		}
		for _, h := range hostile {
			if h == "x;y" && a.Key == KeyRealm {
				continue // a ";" is harmless inside the quoted realm
			}
			if re.MatchString("http://a/"+h) || re.MatchString(h) {
				t.Errorf("%s admits %q", a.Key, h)
			}
		}
	}
}

func TestApply(t *testing.T) {
	secrets := map[string]map[string][]byte{
		"ns/users": {"auth": []byte("# comment\n\nalice:" + apr1 + "\r\nbad line\nbob:{PLAIN}pw\n")},
		"ns/map":   {"carol": []byte(apr1 + "\n"), "dave": []byte("nothash")},
		"ns/empty": {"auth": []byte("# nobody\n")},
		// The host sends another namespace's Secret only when
		// allow-cross-namespace-resources is on.
		"shared/users": {"auth": []byte("erin:" + apr1 + "\n")},
	}
	cases := []struct {
		name        string
		annotations map[string]string
		wantUsers   []string
		wantDeny    bool
		wantExt     *bus.ExternalAuth
		wantErrs    []string // keys of rejecting errors
		wantWarn    []string // keys of warnings
	}{
		{name: "auth-file", annotations: map[string]string{KeyType: "basic", KeySecret: "users"},
			wantUsers: []string{"alice:" + apr1}, wantWarn: []string{KeySecret}},
		{name: "auth-map", annotations: map[string]string{KeyType: "basic", KeySecret: "ns/map", KeySecretType: "auth-map"},
			wantUsers: []string{"carol:" + apr1}, wantWarn: []string{KeySecret}},
		{name: "missing secret", annotations: map[string]string{KeyType: "basic", KeySecret: "gone"},
			wantDeny: true, wantWarn: []string{KeySecret}},
		{name: "no usable user", annotations: map[string]string{KeyType: "basic", KeySecret: "empty"},
			wantDeny: true, wantWarn: []string{KeySecret}},
		{name: "auth-file without key auth", annotations: map[string]string{KeyType: "basic", KeySecret: "map"},
			wantDeny: true, wantWarn: []string{KeySecret}},
		{name: "another namespace not sent fails closed", annotations: map[string]string{KeyType: "basic", KeySecret: "other/users"},
			wantDeny: true, wantWarn: []string{KeySecret}},
		{name: "another namespace sent is used", annotations: map[string]string{KeyType: "basic", KeySecret: "shared/users"},
			wantUsers: []string{"erin:" + apr1}},
		{name: "digest", annotations: map[string]string{KeyType: "digest", KeySecret: "users"}, wantErrs: []string{KeyType}},
		{name: "secret without type", annotations: map[string]string{KeySecret: "users"}, wantErrs: []string{KeySecret}},
		{name: "type without secret", annotations: map[string]string{KeyType: "basic"}, wantErrs: []string{KeySecret}},
		{name: "external", annotations: map[string]string{KeyURL: "http://auth/x", KeyMethod: "POST", KeySignin: "https://l/s?a=b",
			KeyResponseHeaders: "X-User, x-email ,X-USER", KeyRequestRedirect: "/back"},
			wantExt: &bus.ExternalAuth{URL: "http://auth/x", Method: "POST", SigninURL: "https://l/s?a=b", SigninRedirectParam: "rd",
				ResponseHeaders: []string{"X-User", "x-email"}, RequestRedirect: "/back"}},
		{name: "signin param", annotations: map[string]string{KeyURL: "http://auth/x", KeySignin: "https://l/s", KeySigninRedirectParam: "next"},
			wantExt: &bus.ExternalAuth{URL: "http://auth/x", SigninURL: "https://l/s", SigninRedirectParam: "next"}},
		{name: "oauth2-proxy variables", annotations: map[string]string{KeyURL: "https://$host/oauth2/auth",
			KeySignin: "https://$host/oauth2/start?rd=$escaped_request_uri", KeyRequestRedirect: "$scheme://$host$request_uri"},
			wantExt: &bus.ExternalAuth{URL: "https://$host/oauth2/auth", SigninURL: "https://$host/oauth2/start?rd=$escaped_request_uri",
				SigninRedirectParam: "rd", RequestRedirect: "$scheme://$host$request_uri"}},
		{name: "signin too long", annotations: map[string]string{KeyURL: "http://auth/x", KeySignin: "https://l/" + strings.Repeat("a", 2048)},
			wantErrs: []string{KeySignin}},
		{name: "external options without url", annotations: map[string]string{KeyMethod: "GET"}, wantWarn: []string{KeyMethod}},
		{name: "cache", annotations: map[string]string{KeyURL: "http://a", KeyCacheKey: "$remote_user$http_authorization", KeyCacheDuration: "200  1m, 401 30s"},
			wantExt: &bus.ExternalAuth{URL: "http://a", CacheKey: "$remote_user$http_authorization", CacheDurations: []string{"200 1m", "401 30s"}}},
		{name: "cache default duration", annotations: map[string]string{KeyURL: "http://a", KeyCacheKey: "k"},
			wantExt: &bus.ExternalAuth{URL: "http://a", CacheKey: "k", CacheDurations: []string{"200 202 401 5m"}}},
		{name: "cache duration of two times", annotations: map[string]string{KeyURL: "http://a", KeyCacheKey: "k", KeyCacheDuration: "200 1h 30m"},
			wantErrs: []string{KeyCacheDuration}},
		{name: "cache duration without key", annotations: map[string]string{KeyURL: "http://a", KeyCacheDuration: "200 1m"},
			wantExt: &bus.ExternalAuth{URL: "http://a"}, wantWarn: []string{KeyCacheDuration}},
		{name: "cache key too long", annotations: map[string]string{KeyURL: "http://a", KeyCacheKey: strings.Repeat("k", 513)},
			wantErrs: []string{KeyCacheKey}},
		{name: "keepalive", annotations: map[string]string{KeyURL: "http://auth:9000/x", KeyKeepalive: "8", KeyKeepaliveRequests: "5",
			KeyKeepaliveTimeout: "7", KeyKeepaliveShareVars: "true"},
			wantExt: &bus.ExternalAuth{URL: "http://auth:9000/x", Keepalive: &bus.AuthKeepalive{Connections: 8, Requests: 5, TimeoutSeconds: 7, ShareVars: true}}},
		{name: "keepalive defaults", annotations: map[string]string{KeyURL: "https://auth", KeyKeepalive: "2"},
			wantExt: &bus.ExternalAuth{URL: "https://auth", Keepalive: &bus.AuthKeepalive{Connections: 2, Requests: 1000, TimeoutSeconds: 60}}},
		{name: "keepalive with a variable host", annotations: map[string]string{KeyURL: "https://$host/auth", KeyKeepalive: "2"},
			wantExt: &bus.ExternalAuth{URL: "https://$host/auth"}, wantWarn: []string{KeyKeepalive}},
		{name: "keepalive negative", annotations: map[string]string{KeyURL: "http://a", KeyKeepalive: "-1", KeyKeepaliveTimeout: "3"},
			wantExt: &bus.ExternalAuth{URL: "http://a"}, wantWarn: []string{KeyKeepalive, KeyKeepaliveTimeout}},
		{name: "keepalive zero requests", annotations: map[string]string{KeyURL: "http://a", KeyKeepalive: "4", KeyKeepaliveRequests: "0"},
			wantExt: &bus.ExternalAuth{URL: "http://a"}, wantWarn: []string{KeyKeepaliveRequests}},
		{name: "keepalive options without url", annotations: map[string]string{KeyKeepalive: "4", KeyCacheKey: "k", KeyProxySetHeaders: "h"},
			wantWarn: []string{KeyCacheKey, KeyKeepalive, KeyProxySetHeaders}},
		{name: "proxy set headers", annotations: map[string]string{KeyURL: "http://a", KeyProxySetHeaders: "ns/h"},
			wantExt: &bus.ExternalAuth{URL: "http://a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := plugintest.Apply(t, New(), []plugins.Ingress{{Namespace: "ns", Name: "i", Annotations: c.annotations, Secrets: secrets}})[0]
			var errs, warns []string
			for _, e := range r.Errors {
				if strings.Contains(e.Message, apr1) || strings.Contains(e.Message, "nothash") || strings.Contains(e.Message, "PLAIN") {
					t.Errorf("error message leaks secret data: %s", e.Message)
				}
				if e.Warning {
					warns = append(warns, e.Key)
				} else {
					errs = append(errs, e.Key)
				}
			}
			slices.Sort(errs)
			if !slices.Equal(errs, c.wantErrs) || !slices.Equal(slices.Compact(warns), c.wantWarn) {
				t.Errorf("errors %v warnings %v, want %v %v (%+v)", errs, warns, c.wantErrs, c.wantWarn, r.Errors)
			}
			if (r.Features.Deny != nil) != c.wantDeny || (c.wantDeny && r.Features.Deny.Status != 503) {
				t.Errorf("deny = %+v, want deny %v", r.Features.Deny, c.wantDeny)
			}
			var users []string
			var ext *bus.ExternalAuth
			if r.Features.Auth != nil {
				if r.Features.Auth.Basic != nil {
					users = r.Features.Auth.Basic.Users
				}
				ext = r.Features.Auth.External
			}
			if !slices.Equal(users, c.wantUsers) {
				t.Errorf("users %v, want %v", users, c.wantUsers)
			}
			if (ext == nil) != (c.wantExt == nil) || (ext != nil && !equalExt(*ext, *c.wantExt)) {
				t.Errorf("external %+v, want %+v", ext, c.wantExt)
			}
			if err := r.Features.Validate(); err != nil {
				t.Errorf("the host would refuse the features: %v", err)
			}
		})
	}
}

func equalExt(a, b bus.ExternalAuth) bool {
	return a.URL == b.URL && a.Method == b.Method && a.SigninURL == b.SigninURL && a.SigninRedirectParam == b.SigninRedirectParam &&
		slices.Equal(a.ResponseHeaders, b.ResponseHeaders) && a.RequestRedirect == b.RequestRedirect &&
		a.CacheKey == b.CacheKey && slices.Equal(a.CacheDurations, b.CacheDurations) && reflect.DeepEqual(a.Keepalive, b.Keepalive)
}

func TestParseHtpasswdHashes(t *testing.T) {
	good := []string{
		"a:" + apr1,
		"b:$2y$05$abcdefghijklmnopqrstuu5Ns8v4yJcD4u1Q6Yk1Kfjv6a9G8lWm6",
		"c:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=",
		"d:abzlUXK5ed5rs",
		"e:$6$abcdefgh$KQeXafAQAaOoKTevphVU215RvJdgzyfASRasIOuh12hO8u0r1bGW92ZnTmC9IjsiQ8VPiTXBiZF49dFL1U4wX/",
		"f:$1$abcdefgh$0123456789abcdefghijkl",
	}
	bad := []string{"g:{PLAIN}pw", "h:short", ":" + apr1, "i j:" + apr1, "k:" + apr1 + " trailing", "nocolon"}
	users, badLines := ParseHtpasswd(strings.Join(append(good, bad...), "\n") + "\n")
	if !slices.Equal(users, good) {
		t.Errorf("users %v, want %v", users, good)
	}
	if len(badLines) != len(bad) || badLines[0] != "line 7" {
		t.Errorf("bad lines %v, want lines 7 to 12", badLines)
	}
	// A comment field after the hash is dropped, as NGINX ends the hash there.
	if users, _ := ParseHtpasswd("a:" + apr1 + ":comment"); !slices.Equal(users, []string{"a:" + apr1}) {
		t.Errorf("comment field: %v", users)
	}
}

func TestParseHeaderList(t *testing.T) {
	for in, want := range map[string][]string{
		"":                       nil,
		"X-A":                    {"X-A"},
		" X-A , X-B,x-a":         {"X-A", "X-B"},
		"X-A,,X-B":               nil, // an empty name is an error
		"X_A":                    nil,
		strings.Repeat("A", 129): nil,
	} {
		got, msg := ParseHeaderList(in)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v (%s), want %v", in, got, msg, want)
		}
	}
}

// FuzzParseHtpasswd checks that whatever a Secret holds, every line the
// parser keeps passes the host's and renderer's check, and that no line
// break or NUL reaches the htpasswd file.
func FuzzParseHtpasswd(f *testing.F) {
	f.Add("a:" + apr1 + "\n# c\nb:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\r\n")
	f.Add("a:b:c\n\n:x\nx:\x00")
	f.Fuzz(func(t *testing.T, file string) {
		users, _ := ParseHtpasswd(file)
		users2, _ := ParseAuthMap(map[string][]byte{"u": []byte(file), file: []byte(apr1)})
		for _, list := range [][]string{users, users2} {
			if len(list) == 0 {
				continue
			}
			a := bus.Features{Auth: &bus.Auth{Basic: &bus.BasicAuth{Realm: DefaultRealm, Users: list}}}
			if err := a.Validate(); err != nil {
				t.Fatalf("kept lines the host refuses: %v", err)
			}
			for _, u := range list {
				if strings.ContainsAny(u, "\r\n\x00 ") {
					t.Fatalf("kept line with a break, NUL or space: %q", u)
				}
			}
		}
	})
}

// FuzzParseHeaderList checks that kept names are valid header names and
// NGINX variable suffixes.
func FuzzParseHeaderList(f *testing.F) {
	f.Add("X-User, X-Email")
	f.Add("a,$b")
	f.Fuzz(func(t *testing.T, v string) {
		names, _ := ParseHeaderList(v)
		e := bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://a", ResponseHeaders: names}}}
		if err := e.Validate(); err != nil {
			t.Fatalf("%q: kept names the host refuses: %v", v, err)
		}
	})
}

// FuzzExternalAuthOptions: whatever the cache and keepalive annotations
// hold (past the host's patterns), what the plugin returns passes the
// host's check.
func FuzzExternalAuthOptions(f *testing.F) {
	f.Add("http://auth:9000/x", "$remote_user", "200 1m", "4", "10", "5")
	f.Add("https://$host/x", "k", "200 1h 30m", "-1", "0", "x")
	f.Fuzz(func(t *testing.T, url, key, durations, keepalive, requests, timeout string) {
		a := map[string]string{KeyURL: url, KeyCacheKey: key, KeyCacheDuration: durations,
			KeyKeepalive: keepalive, KeyKeepaliveRequests: requests, KeyKeepaliveTimeout: timeout}
		for _, d := range New().Describe().Annotations {
			if v, ok := a[d.Key]; ok && !regexp.MustCompile(`^(?:`+d.Pattern+`)$`).MatchString(v) {
				return // the host refuses the value before the plugin sees it
			}
		}
		e, errs := externalAuth(a)
		if e == nil {
			return
		}
		for _, err := range errs {
			if !err.Warning {
				t.Fatalf("%v: features returned with an error %v", a, err)
			}
		}
		if err := (&bus.Features{Auth: &bus.Auth{External: e}}).Validate(); err != nil {
			t.Fatalf("%v: features the host refuses: %v", a, err)
		}
	})
}
