package bench

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a read costs the API server and etcd.

// ReadCost is the CPU a read of one missing Deployment cost the API server
// and etcd, in milliseconds, served from storage (no resourceVersion) and
// from the API server's watch cache (resourceVersion "0"): the first pass
// over a new resource reads each of its children from the watch cache.
type ReadCost struct {
	Reads              int     `json:"reads"`
	StorageAPIServerMs float64 `json:"storageAPIServerMs"`
	StorageEtcdMs      float64 `json:"storageEtcdMs"`
	CacheAPIServerMs   float64 `json:"cacheAPIServerMs"`
	CacheEtcdMs        float64 `json:"cacheEtcdMs"`
}

// readCost makes reads reads of missing Deployments under the operator's
// identity, four at a time, first from storage and then from the watch
// cache, and measures the API server's and etcd's CPU for each.
func (e *env) readCost(ctx context.Context, reads int) (*ReadCost, error) {
	c, err := e.operatorClient()
	if err != nil {
		return nil, err
	}
	pids := e.cluster.Pids()
	rc := &ReadCost{Reads: reads}
	for _, rv := range []string{"", "0"} {
		meter, err := startCPU(map[string]int{"kube-apiserver": pids["kube-apiserver"], "etcd": pids["etcd"]})
		if err != nil {
			return nil, err
		}
		opts := &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: rv}}
		if err := parallel(4, 0, reads, func(i int) error {
			err := c.Get(ctx, types.NamespacedName{Namespace: probeNamespace, Name: fmt.Sprintf("absent-%d", i)}, &appsv1.Deployment{}, opts)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("read as the operator: %v", err)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		cpu, err := meter.read()
		if err != nil {
			return nil, err
		}
		apiserver, etcd := cpu["kube-apiserver"]*1000/float64(reads), cpu["etcd"]*1000/float64(reads)
		if rv == "" {
			rc.StorageAPIServerMs, rc.StorageEtcdMs = apiserver, etcd
		} else {
			rc.CacheAPIServerMs, rc.CacheEtcdMs = apiserver, etcd
		}
	}
	return rc, nil
}
