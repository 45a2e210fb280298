// Command render writes deploy/switchyard.yaml: the namespace, then the
// chart in deploy/helm/switchyard rendered with its defaults as release
// "switchyard" in it (make deploy-manifest). Run from the repository root.
package main

import (
	"fmt"
	"os"

	"switchyard.dev/switchyard/internal/chart"
)

// Header is the start of deploy/switchyard.yaml, before the chart.
const Header = `# Switchyard, all in one pod: embedded NATS, every stage and NGINX.
# kubectl apply -f deploy/switchyard.yaml
# Generated from deploy/helm/switchyard by make deploy-manifest; edit the chart.
apiVersion: v1
kind: Namespace
metadata:
  name: switchyard-system
`

func main() {
	rendered, err := chart.Render("deploy/helm/switchyard", "switchyard", "switchyard-system", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("deploy/switchyard.yaml", append([]byte(Header), rendered...), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}
