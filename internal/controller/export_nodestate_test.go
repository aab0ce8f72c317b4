package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// EtcdPodsReady returns whether a pass over the EtcdCluster o counts each
// of its member pods ready, reading through c (pods without an address:
// no member is asked).
func EtcdPodsReady(ctx context.Context, c client.Client, o *etcdv1beta2.EtcdCluster) (map[string]bool, error) {
	obs, _, _, err := (&etcdOps{client: c, api: c}).observe(ctx, o)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, p := range obs.Pods {
		out[name] = p.Ready
	}
	return out, nil
}
