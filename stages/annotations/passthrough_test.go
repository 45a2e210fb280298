package annotations

import (
	"context"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/plugins/builtin/passthrough"
)

// TestPassthroughOntoServer: with --enable-ssl-passthrough the server of
// an Ingress with ssl-passthrough passes TLS to its "/" backend; a host
// without a "/" path is warned about and stays terminated; without the
// flag the annotation is a warning and nothing is passed through.
func TestPassthroughOntoServer(t *testing.T) {
	key := bus.DefaultAnnotationsPrefix + "/ssl-passthrough"
	for _, enabled := range []bool{true, false} {
		a := builtinAnnotator(t, passthrough.New())
		a.passthrough = enabled
		c := change{}.ingress("argocd", "server", map[string]string{key: "true"})
		c[bus.Key(bus.KindIngress, "argocd", "sub")] = mustJSON(t, &bus.IngressInfo{Namespace: "argocd", Name: "sub", Annotations: map[string]string{key: "true"}})
		c[bus.Key(bus.KindServer, "sub.example.com")] = mustJSON(t, &bus.Server{Hostname: "sub.example.com", Locations: []bus.Location{
			{Path: "/api", PathType: bus.PathPrefix, Backend: "argocd-api-80", Ingress: "argocd/sub"}}})
		// A wildcard host of the same Ingress has no single SNI name.
		c[bus.Key(bus.KindServer, "*.example.com")] = mustJSON(t, &bus.Server{Hostname: "*.example.com", Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "argocd-api-80", Ingress: "argocd/sub"}}})
		out := update(t, a, context.Background(), c)

		s := harness.Decode[bus.Server](t, out.Puts, bus.Key(bus.KindServer, "server.example.com"))
		want := bus.Server{SSLPassthrough: enabled}
		if enabled {
			want.PassthroughBackend, want.PassthroughFrom = "argocd-server-80", "argocd/server"
		}
		if s.SSLPassthrough != want.SSLPassthrough || s.PassthroughBackend != want.PassthroughBackend || s.PassthroughFrom != want.PassthroughFrom {
			t.Errorf("flag %v: server passthrough %v %q %q", enabled, s.SSLPassthrough, s.PassthroughBackend, s.PassthroughFrom)
		}
		if sub := harness.Decode[bus.Server](t, out.Puts, bus.Key(bus.KindServer, "sub.example.com")); sub.SSLPassthrough {
			t.Errorf("flag %v: a host without \"/\" passes TLS through", enabled)
		}
		info := infoOf(t, out, "argocd", "server")
		sub := infoOf(t, out, "argocd", "sub")
		if enabled {
			if wild := harness.Decode[bus.Server](t, out.Puts, bus.Key(bus.KindServer, "*.example.com")); wild.SSLPassthrough {
				t.Error("a wildcard host passes TLS through")
			}
			if len(info.Problems) != 0 || len(sub.Problems) != 2 || !strings.Contains(sub.Problems[0].Message+sub.Problems[1].Message, `no "/" path`) ||
				!strings.Contains(sub.Problems[0].Message+sub.Problems[1].Message, "only exact host names") {
				t.Errorf("flag on: problems %+v and %+v", info.Problems, sub.Problems)
			}
			continue
		}
		if info.Rejected || len(info.Problems) != 1 || info.Problems[0].Reason != ReasonAnnotationWarning ||
			!strings.Contains(info.Problems[0].Message, "has no effect without --enable-ssl-passthrough") {
			t.Errorf("flag off: problems %+v", info.Problems)
		}
		if feats, ok := served(t, out, "server"); !ok || (feats != nil && feats.Passthrough != nil) {
			t.Errorf("flag off: location served %v with %+v", ok, feats)
		}
	}
}
