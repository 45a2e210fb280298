package watcher

import (
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	for _, in := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata:\n  MARKER: 123\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n  - port: 80\n  - port: MARKER\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n  - port: 80\n  - port: 81\n    targetPot: 5\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n  - port: 80\n  - port: 81\n    targetPort: [5]\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  creationTimestamp: MARKER\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata:\n  a: '!!!'\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata:\n  a: YQ==\n  a: YQ==\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: X_y\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  Name: x\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n  namespace: a.b\n",
		"---\n# c\n---\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: [\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  a: b\ndata:\n  a: YQ==\n  c: YQ==\n",
		"apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: nginx\n  namespace: foo\nspec:\n  controller: k8s.io/ingress-nginx\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n  - port: 3000000000\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80, nope: 1}]}\n",
	} {
		objs, skipped, err := parseManifest("f.yaml", []byte(in))
		fmt.Printf("err=%v\n", err)
		for _, o := range objs {
			fmt.Printf("  %s %s %s\n", o.Key, o.Source, o.JSON)
		}
		fmt.Println("  skipped", skipped)
	}
}
