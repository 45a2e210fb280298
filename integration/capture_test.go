package integration

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestRegexPathOfAnotherNamespaceCannotOpenAuth is issue 10, finding 3:
// namespace "other" adds to tenant's host an Ingress with use-regex and the
// path /admin.*, which ingress-nginx (and Switchyard before) rendered ahead
// of tenant's basic-auth /admin, so requests got 200 without credentials
// and users' Authorization headers reached other's backend. Now the
// protected path answers only through its protection, from tenant's
// backend; other's regex still serves what no protected path covers.
func TestRegexPathOfAnotherNamespaceCannotOpenAuth(t *testing.T) {
	bin := harness.Binary(t)
	e := &env{t: t, dir: t.TempDir()}
	tenantPort := harness.StartEcho(t, bin, "tenant-app", "tenant-1")
	otherPort := harness.StartEcho(t, bin, "other-grab", "other-1")
	e.write("class.yaml", harness.ClassYAML)
	e.write("services.yaml", harness.ServiceYAML("tenant", "app", tenantPort)+"---\n"+harness.ServiceYAML("other", "grab", otherPort))
	e.write("secret.yaml", secretYAML("tenant", "users", map[string]string{"auth": "alice:" + apr1Hash + "\n"}))
	e.write("tenant.yaml", harness.AnnotatedIngressYAML("tenant", "admin", "app.test", basicAuthAnnotations("users"),
		harness.Path{Path: "/admin", Type: "Prefix", Service: "app"}))
	e.write("other.yaml", harness.AnnotatedIngressYAML("other", "grab", "app.test",
		map[string]string{authPrefix + "use-regex": "true"},
		harness.Path{Path: "/admin.*", Type: "ImplementationSpecific", Service: "grab"}))
	// Nor may its Exact and Prefix paths at or under the protected one:
	// NGINX would give them /admin and /admin/x/... (exact or longer
	// prefix match) without auth. They are left out and logged.
	e.write("nested.yaml", harness.IngressYAML("other", "nested", "app.test",
		harness.Path{Path: "/admin", Type: "Exact", Service: "grab"},
		harness.Path{Path: "/admin/x", Type: "Prefix", Service: "grab"},
		harness.Path{Path: "/public", Type: "Prefix", Service: "grab"}))
	e.sy = harness.StartSwitchyard(t, e.dir)

	// Both Ingresses are live: other's regex serves /adminx, which is not
	// under tenant's Prefix /admin (whole path elements).
	e.eventually("app.test", "/adminx", "other's regex path", servedBy("other-1"))
	e.eventually("app.test", "/public", "other's Prefix path outside tenant's", servedBy("other-1"))
	e.eventually("app.test", "/admin", "tenant's auth", status(401))
	for _, p := range []string{"/admin", "/admin/x"} {
		if want := `path \"` + p + `\" of Ingress other/nested left out`; !strings.Contains(e.sy.Output.String(), want) {
			t.Errorf("the log does not say %s", want)
		}
	}

	creds := basicHeader("alice", "pw")
	for _, path := range []string{"/admin", "/admin/", "/admin/users", "/admin/x.json?a=1", "/admin/x", "/admin/x/y", "/admin//x", "/admin/../admin/x", "/admin/%2e%2e/admin"} {
		if r := e.getWith("app.test", path, nil); r.Status != 401 {
			t.Errorf("%s without credentials: got %d %s, want 401", path, r.Status, truncate(r.Body))
		}
		if r := e.getWith("app.test", path, basicHeader("alice", "wrong")); r.Status != 401 {
			t.Errorf("%s with a wrong password: got %d, want 401", path, r.Status)
		}
		// With credentials: tenant's backend, never other's, which must
		// not see the Authorization header.
		r := e.getWith("app.test", path, creds)
		if !servedBy("tenant-1")(r) {
			t.Errorf("%s with credentials: got %d %s, want 200 from tenant's backend", path, r.Status, truncate(r.Body))
		}
	}
	// Other's regex takes nothing under /admin/ even as a longer match.
	for _, path := range []string{"/admin/adminx", "/admin/.*"} {
		if r := e.getWith("app.test", path, creds); r.Echo != nil && r.Echo.Pod == "other-1" {
			t.Errorf("%s reached other's backend with the Authorization header", path)
		}
	}
}
