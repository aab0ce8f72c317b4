package resources

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ClaimGrowth is the next step in growing a data service's claims to a
// larger size, decided from the claims alone. It exists because a
// StatefulSet's volumeClaimTemplates cannot change: the claims are grown
// in place, one at a time, so that a volume that fails to grow leaves the
// others as they were and at most one member waits on its storage.
type ClaimGrowth struct {
	// Size is the size the claims grow to.
	Size resource.Quantity
	// Grow is the claim to ask Size for now; empty when none.
	Grow string
	// Waiting is the claim whose volume is growing (or, not bound yet,
	// cannot be grown): no other is asked for more meanwhile.
	Waiting string
	// NotExpandable is the StorageClass, of a claim that must grow, that
	// does not allow volume expansion; nothing is grown.
	NotExpandable string
	// Claim is the claim of the class NotExpandable.
	Claim string
	// Grown and Total count the claims at Size, and all of them.
	Grown, Total int
}

// Expanding reports whether a claim is being grown or is about to be.
func (g ClaimGrowth) Expanding() bool { return g.Grow != "" || g.Waiting != "" }

// Message says what the growth does or why it cannot.
func (g ClaimGrowth) Message() string {
	switch {
	case g.NotExpandable != "":
		return fmt.Sprintf("claim %s cannot grow to %s: its StorageClass %s does not allow volume expansion (allowVolumeExpansion); no claim is changed", g.Claim, g.Size.String(), g.NotExpandable)
	case g.Grow != "":
		return fmt.Sprintf("growing claim %s to %s (%d of %d claims at that size)", g.Grow, g.Size.String(), g.Grown, g.Total)
	case g.Waiting != "":
		return fmt.Sprintf("waiting for claim %s to reach %s (%d of %d claims at that size)", g.Waiting, g.Size.String(), g.Grown, g.Total)
	}
	return fmt.Sprintf("all %d claims at %s", g.Total, g.Size.String())
}

// NextClaimGrowth is the next step in growing claims to size. expandable
// says, by StorageClass name, whether the class allows volume expansion
// (a class it does not name does not). A claim counts as grown once its
// volume's capacity is at least size, or once only the file system is
// left to grow (FileSystemResizePending: the kubelet grows it when the
// pod next mounts it); a claim asked for more and not yet grown is waited
// for before the next is asked. A claim already larger is left as it is.
func NextClaimGrowth(claims []corev1.PersistentVolumeClaim, size resource.Quantity, expandable map[string]bool) ClaimGrowth {
	g := ClaimGrowth{Size: size, Total: len(claims)}
	sorted := make([]*corev1.PersistentVolumeClaim, len(claims))
	for i := range claims {
		sorted[i] = &claims[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var next *corev1.PersistentVolumeClaim
	unbound := ""
	for _, c := range sorted {
		requested := c.Spec.Resources.Requests[corev1.ResourceStorage]
		switch {
		case c.Status.Phase != corev1.ClaimBound:
			// A claim not bound yet cannot be resized, and holds up no
			// other: it is grown once bound (or made at the size).
			if requested.Cmp(size) < 0 && unbound == "" {
				unbound = c.Name
			} else if requested.Cmp(size) >= 0 {
				g.Grown++
			}
		case requested.Cmp(size) < 0:
			if next == nil {
				next = c
			}
		case grown(c, requested):
			g.Grown++
		case g.Waiting == "":
			// Asked for more, its volume not grown yet.
			g.Waiting = c.Name
		}
	}
	if next == nil {
		if g.Waiting == "" {
			g.Waiting = unbound
		}
		return g
	}
	if class := ptrString(next.Spec.StorageClassName); !expandable[class] {
		g.NotExpandable, g.Claim, g.Waiting = class, next.Name, ""
		return g
	}
	if g.Waiting == "" {
		g.Grow = next.Name
	}
	return g
}

// grown reports whether claim c, asked for requested, has it: its
// capacity, or only its file system left to grow.
func grown(c *corev1.PersistentVolumeClaim, requested resource.Quantity) bool {
	if capacity, ok := c.Status.Capacity[corev1.ResourceStorage]; ok && capacity.Cmp(requested) >= 0 {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
