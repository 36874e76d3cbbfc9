// Command kubectl is kubectl built from the Kubernetes release of the local
// control plane (k8s.io/kubectl, as k8s.io/kubernetes/cmd/kubectl builds
// it), for the e2e tests of podtrace serve. hack/build-kubectl.sh builds it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
