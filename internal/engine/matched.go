package engine

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// matchedChildren remembers, per resource, the children its last pass found
// or made as desired, so that a child unchanged since is not compared field
// by field again: that comparison is most of a steady pass's work.
type matchedChildren struct {
	m sync.Map // client.ObjectKey -> []matchedChild
}

// matchedChild is a child found or made as desired: a digest of its uid
// (a child deleted and made again is another; a digest rather than the
// uid string, which would keep alive the string of an object the cache has
// let go of), the digest of the fields the kind's manager owned on it then
// (ownedDigest), that of the apply configuration it matched, and its
// resourceVersion then.
type matchedChild struct {
	uid     uint64
	owned   uint64
	desired uint64
	version string
}

// matchOf returns live, wanted as d, as a matchedChild; false when the
// field manager owns no fields on it.
func matchOf(live client.Object, d Desired, manager string) (matchedChild, bool) {
	owned, ok := ownedDigest(live, manager)
	return matchedChild{uid: digestOf([]byte(live.GetUID())), owned: owned, desired: d.digest, version: live.GetResourceVersion()}, ok
}

// matchedBefore reports whether m, a live child, is one of the children
// prev matched, unchanged since in the fields the manager owns, and not an
// older copy than the one matched: a cache behind the controller's own
// last write to a child shows the same owned fields with their old values.
func matchedBefore(prev []matchedChild, m matchedChild) bool {
	for _, p := range prev {
		if p.uid == m.uid && p.owned == m.owned && p.desired == m.desired {
			order, err := resourceversion.CompareResourceVersion(m.version, p.version)
			return err == nil && order >= 0
		}
	}
	return false
}

// Of returns the children the last pass over the resource key matched.
func (c *matchedChildren) Of(key client.ObjectKey) []matchedChild {
	v, ok := c.m.Load(key)
	if !ok {
		return nil
	}
	return v.([]matchedChild)
}

// Set replaces the matched children of the resource key, when they changed.
func (c *matchedChildren) Set(key client.ObjectKey, prev, next []matchedChild) {
	if !slices.Equal(prev, next) {
		c.m.Store(key, next)
	}
}

// Forget forgets the resource key (deleted).
func (c *matchedChildren) Forget(key client.ObjectKey) { c.m.Delete(key) }
