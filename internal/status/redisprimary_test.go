package status

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

func TestRedisPrimaryHistory(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Minute))
	change := func(from, to, reason string) redisv1alpha1.PrimaryChange {
		return redisv1alpha1.PrimaryChange{From: from, To: to, Reason: reason, Time: t0}
	}
	older := []redisv1alpha1.PrimaryChange{change("r-1", "r-0", redisv1alpha1.PrimaryChangeSwitchover)}
	full := make([]redisv1alpha1.PrimaryChange, redisv1alpha1.MaxPrimaryHistory)
	for i := range full {
		full[i] = change(fmt.Sprintf("r-%d", i+1), fmt.Sprintf("r-%d", i), redisv1alpha1.PrimaryChangeHandover)
	}
	tests := []struct {
		name          string
		history       []redisv1alpha1.PrimaryChange
		from, to, why string
		want          []redisv1alpha1.PrimaryChange
	}{
		{"should record nothing for the first primary", nil, "", "r-0", redisv1alpha1.PrimaryChangeFailover, nil},
		{"should record nothing when the primary stays", older, "r-0", "r-0", redisv1alpha1.PrimaryChangeFailover, older},
		{"should record nothing when no primary is recorded after", older, "r-0", "", redisv1alpha1.PrimaryChangeFailover, older},
		{"should record a failover first", older, "r-0", "r-2", redisv1alpha1.PrimaryChangeFailover,
			[]redisv1alpha1.PrimaryChange{{From: "r-0", To: "r-2", Reason: redisv1alpha1.PrimaryChangeFailover, Time: now}, older[0]}},
		{"should keep at most MaxPrimaryHistory, dropping the oldest", full, "r-0", "r-2", redisv1alpha1.PrimaryChangeHandover,
			append([]redisv1alpha1.PrimaryChange{{From: "r-0", To: "r-2", Reason: redisv1alpha1.PrimaryChangeHandover, Time: now}}, full[:redisv1alpha1.MaxPrimaryHistory-1]...)},
		{"should take back the change a failed step recorded", []redisv1alpha1.PrimaryChange{change("r-0", "r-2", redisv1alpha1.PrimaryChangeFailover), older[0]},
			"r-2", "r-0", "", older},
		{"should take back nothing that is not the newest change's reverse", older, "r-2", "r-0", "", older},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]redisv1alpha1.PrimaryChange(nil), tt.history...)
			got := RedisPrimaryHistory(tt.history, tt.from, tt.to, tt.why, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.history); diff != "" {
				t.Errorf("the history passed in was modified (-before +after):\n%s", diff)
			}
		})
	}
}
