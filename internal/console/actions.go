package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
)

// ActionError is an action refused or failed, with the HTTP status it
// answers.
type ActionError struct {
	Status  int
	Message string
}

func (e *ActionError) Error() string { return e.Message }

// Result is what an action did: the request it wrote on the resource.
type Result struct {
	// Action is "backup" or "switchover".
	Action string `json:"action"`
	// Request is the annotation's value written: the operator records it
	// in the status once handled.
	Request string `json:"request"`
	// Annotation is the annotation written.
	Annotation string `json:"annotation"`
	// Message says what happens next.
	Message string `json:"message"`
}

// cluster reads the RedisEnterpriseCluster the console serves.
func (s *Server) cluster(ctx context.Context) (*redisv1alpha1.RedisEnterpriseCluster, error) {
	var o redisv1alpha1.RedisEnterpriseCluster
	if err := s.cfg.Client.Get(ctx, types.NamespacedName{Namespace: s.cfg.Namespace, Name: s.cfg.Cluster}, &o); err != nil {
		return nil, fmt.Errorf("read RedisEnterpriseCluster %s: %w", s.cfg.Cluster, err)
	}
	return &o, nil
}

// requestID is a new request ID: the time, in nanoseconds.
func (s *Server) requestID() string {
	return "console-" + strconv.FormatInt(s.now().UnixNano(), 10)
}

// Backup asks the operator for a backup now: the annotation
// app-operator/backup set to a new request ID. Refused (409) when the
// cluster has no spec.backup.
func (s *Server) Backup(ctx context.Context) (Result, error) {
	o, err := s.cluster(ctx)
	if err != nil {
		return Result{}, err
	}
	if o.Spec.Backup == nil {
		return Result{}, &ActionError{Status: http.StatusConflict, Message: "the cluster has no spec.backup: set where backups go first"}
	}
	id := s.requestID()
	if err := s.annotate(ctx, o, redisv1alpha1.BackupNowAnnotation, id); err != nil {
		return Result{}, err
	}
	s.cfg.Log.Info("Asked for a backup", "request", id)
	return Result{Action: "backup", Request: id, Annotation: redisv1alpha1.BackupNowAnnotation,
		Message: "backup " + id + " asked for: the operator starts it and reports it in status.backupInfo"}, nil
}

// Switchover asks the operator to move the primary to node (a pod name,
// or "any"): the annotation app-operator/switchover set to node and a new
// request ID. Refused (409) when node is not a healthy replica in sync
// per the status, or when "any" finds none.
func (s *Server) Switchover(ctx context.Context, node string) (Result, error) {
	if node == "" {
		return Result{}, &ActionError{Status: http.StatusBadRequest, Message: `name the node to switch over to, or "any"`}
	}
	o, err := s.cluster(ctx)
	if err != nil {
		return Result{}, err
	}
	targets := SwitchoverTargets(o)
	switch {
	case node == switchover.Any && len(targets) == 0:
		return Result{}, &ActionError{Status: http.StatusConflict, Message: "no replica is healthy and in sync: no switchover is possible now"}
	case node == o.Status.Primary:
		return Result{}, &ActionError{Status: http.StatusConflict, Message: node + " is the primary already"}
	case node != switchover.Any && !slices.Contains(targets, node):
		return Result{}, &ActionError{Status: http.StatusConflict, Message: node + " is not a healthy replica in sync with the primary"}
	}
	value := node + "/" + s.requestID()
	if err := s.annotate(ctx, o, switchover.Annotation, value); err != nil {
		return Result{}, err
	}
	s.cfg.Log.Info("Asked for a switchover", "request", value)
	return Result{Action: "switchover", Request: value, Annotation: switchover.Annotation,
		Message: "switchover to " + node + " asked for: the operator reports its outcome in status.lastSwitchover"}, nil
}

// annotate sets one annotation of o with a merge patch, which touches
// nothing else.
func (s *Server) annotate(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	if err := s.cfg.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate RedisEnterpriseCluster %s: %w", o.Name, err)
	}
	return nil
}
