// Command coredns is CoreDNS with only the plugins the real-node profile's
// cluster DNS uses: it answers for cluster.local from the API server's
// Services and EndpointSlices, as a cluster's DNS add-on does, and nothing
// else (no forwarding: nothing leaves the machine).
package main

import (
	_ "github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
