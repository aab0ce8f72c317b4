package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// claim is a claim of class asked for requested, with capacity (empty: not
// bound).
func claim(name, class, requested, capacity string, conds ...corev1.PersistentVolumeClaimConditionType) corev1.PersistentVolumeClaim {
	c := corev1.PersistentVolumeClaim{}
	c.Name = name
	c.Spec.StorageClassName = &class
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(requested)}
	if capacity != "" {
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	} else {
		c.Status.Phase = corev1.ClaimPending
	}
	for _, t := range conds {
		c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return c
}

func TestNextClaimGrowthGrowsOneClaimAtATime(t *testing.T) {
	expandable := map[string]bool{"expandable": true, "fixed": false}
	tests := []struct {
		name   string
		claims []corev1.PersistentVolumeClaim
		want   ClaimGrowth // Size and Total are filled in
	}{
		{name: "all at the size: nothing",
			claims: []corev1.PersistentVolumeClaim{claim("data-2", "expandable", "2Gi", "2Gi"), claim("data-1", "expandable", "2Gi", "2Gi")},
			want:   ClaimGrowth{Grown: 2}},
		{name: "the first claim by name grows first",
			claims: []corev1.PersistentVolumeClaim{claim("data-2", "expandable", "1Gi", "1Gi"), claim("data-1", "expandable", "1Gi", "1Gi"), claim("data-0", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Grow: "data-0"}},
		{name: "a claim asked for more and not grown holds the next",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "2Gi", "1Gi"), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Waiting: "data-0"}},
		{name: "a grown claim lets the next grow",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "2Gi", "2Gi"), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Grow: "data-1", Grown: 1}},
		{name: "only the file system left to grow counts as grown",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "2Gi", "1Gi", corev1.PersistentVolumeClaimFileSystemResizePending), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Grow: "data-1", Grown: 1}},
		{name: "a volume still resizing is waited for",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "2Gi", "1Gi", corev1.PersistentVolumeClaimResizing), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Waiting: "data-0"}},
		{name: "a class without expansion: nothing grows, the class is named",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "fixed", "1Gi", "1Gi"), claim("data-1", "fixed", "1Gi", "1Gi")},
			want:   ClaimGrowth{NotExpandable: "fixed", Claim: "data-0"}},
		{name: "a class that does not exist: nothing grows",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "gone", "1Gi", "1Gi")},
			want:   ClaimGrowth{NotExpandable: "gone", Claim: "data-0"}},
		{name: "a larger claim is left as it is",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "fixed", "4Gi", "4Gi"), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Grow: "data-1", Grown: 1}},
		{name: "a claim not bound yet holds up no other",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "1Gi", ""), claim("data-1", "expandable", "1Gi", "1Gi")},
			want:   ClaimGrowth{Grow: "data-1"}},
		{name: "a claim not bound yet is waited for last",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "1Gi", ""), claim("data-1", "expandable", "2Gi", "2Gi")},
			want:   ClaimGrowth{Waiting: "data-0", Grown: 1}},
		{name: "a claim made at the size and not bound yet counts as grown",
			claims: []corev1.PersistentVolumeClaim{claim("data-0", "expandable", "2Gi", "")},
			want:   ClaimGrowth{Grown: 1}},
		{name: "no claims (no persistence): nothing"},
	}
	size := resource.MustParse("2Gi")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextClaimGrowth(tt.claims, size, expandable)
			tt.want.Size, tt.want.Total = size, len(tt.claims)
			if got.Grow != tt.want.Grow || got.Waiting != tt.want.Waiting || got.NotExpandable != tt.want.NotExpandable ||
				got.Claim != tt.want.Claim || got.Grown != tt.want.Grown || got.Total != tt.want.Total {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.Message() == "" {
				t.Error("no message")
			}
		})
	}
}
