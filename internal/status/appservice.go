package status

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
)

// AppService sets the status of an AppService or a WebService from its
// Deployment d (nil when missing) and the pass's failure (nil on success).
// observedGeneration moves only after a successful pass.
func AppService(st *appv1.AppServiceStatus, generation int64, selector string, d *appsv1.Deployment, failure *conditions.Failure, now metav1.Time) {
	w := SetWorkloadConditions(&st.Conditions, generation, d, failure, now)
	st.Replicas = w.Replicas
	st.ReadyReplicas = w.ReadyReplicas
	st.AvailableReplicas = w.AvailableReplicas
	st.UpdatedReplicas = w.UpdatedReplicas
	st.UnavailableReplicas = w.UnavailableReplicas
	st.Selector = selector
	if failure == nil {
		st.ObservedGeneration = generation
	}
}
