// Package admission checks the API's validation markers against a real
// kube-apiserver (the APIOnly profile): the CRDs' schemas and CEL rules
// refuse bad input with a message naming the field, accept good input,
// and keep a stored resource updatable when its schema tightens. No
// operator runs: every write is the API server's answer alone.
package admission

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	k8s         client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunAgainstAPIServer(m, func(c *cluster.Cluster, kc client.Client) { testCluster, k8s = c, kc }, badInputsRefused))
}
