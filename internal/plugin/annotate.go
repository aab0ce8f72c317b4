package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
)

// SetAnnotation sets the annotation key of obj to value, or removes it
// when value is nil, by a merge patch: the commands write the resource,
// and the operator acts on what it says.
func SetAnnotation(ctx context.Context, c client.Writer, obj client.Object, key string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// Pause sets the pause annotation: the operator takes no action on obj
// until Resume.
func Pause(ctx context.Context, c client.Writer, obj client.Object) error {
	value := "true"
	return SetAnnotation(ctx, c, obj, conditions.PausedAnnotation, &value)
}

// Resume removes the pause annotation.
func Resume(ctx context.Context, c client.Writer, obj client.Object) error {
	return SetAnnotation(ctx, c, obj, conditions.PausedAnnotation, nil)
}

// Hibernate sets spec.hibernate of a data service to on: true stops every
// pod and keeps every claim, false wakes it. Other kinds have no such
// switch.
func Hibernate(ctx context.Context, c client.Writer, obj client.Object, on bool) error {
	switch obj.(type) {
	case *etcdv1beta2.EtcdCluster, *redisv1alpha1.RedisEnterpriseCluster:
	default:
		return fmt.Errorf("only an EtcdCluster or a RedisEnterpriseCluster hibernates, not a %T", obj)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]bool{"hibernate": on}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// Switchover asks the operator to move the primary (the leader) of a data
// service to target, a node (member) name or switchover.Any: it sets the
// switchover annotation to target and a request ID made of now, so that
// a request for the same target as an earlier one is a new request.
func Switchover(ctx context.Context, c client.Writer, obj client.Object, target string, now time.Time) (string, error) {
	switch obj.(type) {
	case *etcdv1beta2.EtcdCluster, *redisv1alpha1.RedisEnterpriseCluster:
	default:
		return "", fmt.Errorf("only an EtcdCluster or a RedisEnterpriseCluster has a primary or a leader to move, not a %T", obj)
	}
	value := target + "/" + strconv.FormatInt(now.Unix(), 10)
	return value, SetAnnotation(ctx, c, obj, switchover.Annotation, &value)
}
