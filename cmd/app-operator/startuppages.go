package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// startupPages is a runnable of the manager that releases the pages of
// the executable the start-up touched (releaseStartupPages) once the
// cache has synced: most of the code that runs before, such as the
// registration of every API group's types, never runs again, and the
// pages would stay in the manager's RSS.
type startupPages struct{ cache cache.Cache }

func (p startupPages) Start(ctx context.Context) error {
	if p.cache.WaitForCacheSync(ctx) {
		releaseStartupPages()
	}
	return nil
}

// NeedLeaderElection is false: a replica waiting for the Lease keeps its
// cache too.
func (startupPages) NeedLeaderElection() bool { return false }
