package microservicedeploy

import (
	"fmt"
	"time"

	"github.com/app-operator/app-operator/api/conditions"
)

// Hosts are claimed. An instance wants the host <msName>-<path>.<base
// domain>, and several instances, in one namespace or in several, may want
// the same one: two instances of one microservice and path, or two whose
// names only join to the same string ("a-b" with path "c" and "a" with path
// "b-c" both want a-b-c.<base domain>). Only one of them holds it, so that no
// instance can take over a host another one serves: the oldest by
// metadata.creationTimestamp. The API server stamps creation times to the
// second, so instances created within the same second are ordered by
// namespace, then name. The others are not exposed until the holder is
// deleted or stops wanting the host.

// Claimant is an instance that wants a host, as the claim on it sees it.
type Claimant struct {
	Namespace, Name string
	// Created is metadata.creationTimestamp.
	Created time.Time
	// Deleting is whether metadata.deletionTimestamp is set: an instance on
	// its way out gives its host up.
	Deleting bool
}

// String is the claimant's namespace/name.
func (c Claimant) String() string { return c.Namespace + "/" + c.Name }

// HostHolder returns which instance holds a host that self and every
// candidate want: the oldest not being deleted, ties going to the first by
// namespace, then name. Candidates may include self. Self holds the host
// when no candidate comes before it.
func HostHolder(self Claimant, candidates []Claimant) Claimant {
	holder := self
	for _, c := range candidates {
		if c.Deleting {
			continue
		}
		if holder.Deleting || before(c, holder) {
			holder = c
		}
	}
	return holder
}

// before reports whether a's claim comes before b's.
func before(a, b Claimant) bool {
	switch {
	case !a.Created.Equal(b.Created):
		return a.Created.Before(b.Created)
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	default:
		return a.Name < b.Name
	}
}

// LostTo returns the exposure of an instance whose host holder, another
// instance (namespace/name), holds: nothing is exposed, and the reason says
// which host and who holds it. It returns e itself when holder is empty or
// e exposes nothing.
func (e Exposure) LostTo(holder string) Exposure {
	if holder == "" || !e.Exposed() {
		return e
	}
	return Exposure{Reason: conditions.ReasonHostConflict, Message: fmt.Sprintf(
		"Host %s is held by MicroServiceDeploy %s, which claimed it first; this instance is not exposed until that one is deleted or stops wanting the host",
		e.Host, holder)}
}
