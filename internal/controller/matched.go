package controller

import (
	"slices"
	"sync"

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
// (ownedDigest) and that of the apply configuration it matched.
type matchedChild struct {
	uid     uint64
	owned   uint64
	desired uint64
}

// matchOf returns live, wanted as d, as a matchedChild; false when the
// field manager owns no fields on it.
func matchOf(live client.Object, d desiredChild, manager string) (matchedChild, bool) {
	owned, ok := ownedDigest(live, manager)
	return matchedChild{uid: digestOf([]byte(live.GetUID())), owned: owned, desired: d.digest}, ok
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
