package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
)

// outcome is how a phase of a pass ended when it did not simply go on: the
// failure to report in the status, the error for the work queue, and when
// to look again. The zero outcome means the phase succeeded.
type outcome struct {
	failure *conditions.Failure
	err     error
	result  ctrl.Result
	// ended is set when the resource turned out to be gone or being
	// deleted: the pass ends there, without a status write.
	ended bool
}

// stopped reports whether the pass stops here.
func (o outcome) stopped() bool { return o.failure != nil || o.err != nil || o.ended }

// invalidSpec is a spec the builders cannot turn into children: reported,
// and not retried until the spec changes.
func invalidSpec(err error) outcome {
	return outcome{
		failure: &conditions.Failure{Reason: conditions.ReasonInvalidSpec, Message: err.Error()},
		err:     reconcile.TerminalError(err),
	}
}

// inputUnusable is an object the resource names (a Secret) that is
// missing or cannot serve, which the build reported as f: nothing is
// applied, and the resource is looked at again every recheck interval,
// since the operator is not told when that object changes.
func inputUnusable(f *conditions.Failure, recheck time.Duration) outcome {
	return outcome{failure: f, result: ctrl.Result{RequeueAfter: recheck}}
}

// apiFailed is a request to the API server that failed for a reason
// nothing but time resolves: reported, and retried with backoff.
func apiFailed(err error) outcome {
	return outcome{failure: &conditions.Failure{Reason: conditions.ReasonApplyFailed, Message: err.Error()}, err: err}
}

// childConflict is a same-named object the resource does not control
// standing where one of its children goes. The operator is not told when
// it goes away (the cache holds only the operator's objects), so the
// resource looks again every recheck interval.
func childConflict(d Desired, live client.Object, recheck ctrl.Result) outcome {
	owner := "it is not controlled by any resource"
	if ref := metav1.GetControllerOf(live); ref != nil {
		owner = fmt.Sprintf("it is controlled by %s %s", ref.Kind, ref.Name)
	}
	return outcome{result: recheck, failure: &conditions.Failure{Reason: conditions.ReasonChildConflict, Message: fmt.Sprintf(
		"%s %s already exists and %s; the operator leaves it alone until it is deleted or renamed", d.gvk.Kind, d.name, owner)}}
}

// applyFailed classifies an apply error. Nothing the API server answers is
// terminal: only a spec the builders cannot turn into children is (see
// invalidSpec). A child refused at admission (a webhook, a
// ValidatingAdmissionPolicy, an immutable field) is reported and looked at
// again every recheck interval, since what refused it may change without
// the operator being told; a node port taken by another Service, which may
// be released, and transient errors are retried with backoff.
func applyFailed(d Desired, err error, recheck ctrl.Result) outcome {
	msg := fmt.Sprintf("apply %s: %s", d, apiMessage(err))
	switch {
	case IsNodePortTaken(err):
		return outcome{failure: &conditions.Failure{Reason: conditions.ReasonNodePortAllocated, Message: msg}, err: err}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return outcome{result: recheck, failure: &conditions.Failure{Reason: conditions.ReasonApplyRejected, Message: msg}}
	default:
		return outcome{failure: &conditions.Failure{Reason: conditions.ReasonApplyFailed, Message: msg}, err: err}
	}
}

// stepFailed is a step-wise kind's step that could not be taken or
// observed: the application did not answer in time, say. Retried with
// backoff.
func stepFailed(err error) outcome {
	return outcome{failure: &conditions.Failure{Reason: conditions.ReasonStepFailed, Message: err.Error()}, err: err}
}

// IsNodePortTaken reports whether the API server refused a Service
// because another Service holds a node port it asks for.
func IsNodePortTaken(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "provided port is already allocated")
}

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}
