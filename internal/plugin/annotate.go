package plugin

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
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
