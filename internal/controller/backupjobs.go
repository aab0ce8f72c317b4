package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// backupJobsKept is how many finished backup Jobs of a resource stay, for
// `kubectl logs`: the older ones are deleted. The status keeps what the
// last ones said.
const backupJobsKept = 3

// jobRun is what one backup Job did: running, or done, with why it
// failed (from its condition) and its tool's termination message.
type jobRun struct {
	done, succeeded bool
	// message is why the Job failed, from its condition.
	message string
	// said is the termination message of the tool's container in the
	// last pod that ended; empty when none did.
	said string
}

// backupJobsOf lists the Jobs of owner's backups (those with labels that
// owner controls), newest first.
func backupJobsOf(ctx context.Context, c client.Reader, owner client.Object, labels map[string]string) ([]*batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := c.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.MatchingLabels(labels)); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var jobs []*batchv1.Job
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == owner.GetUID() {
			jobs = append(jobs, &list.Items[i])
		}
	}
	// Newest first; within a second, by name, which ends with the start
	// time.
	slices.SortFunc(jobs, func(a, b *batchv1.Job) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(len(b.Name), len(a.Name)), strings.Compare(b.Name, a.Name))
	})
	return jobs, nil
}

// readJobRun reads what the Job j did; container names the tool's
// container.
func readJobRun(ctx context.Context, c client.Reader, j *batchv1.Job, container string) (jobRun, error) {
	var run jobRun
	for _, cond := range j.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			run.done, run.succeeded = true, true
		case batchv1.JobFailed:
			run.done, run.message = true, fmt.Sprintf("Job %s failed: %s: %s", j.Name, cond.Reason, cond.Message)
		}
	}
	if !run.done {
		return run, nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return run, fmt.Errorf("list the pods of job %s: %w", j.Name, err)
	}
	var last *corev1.ContainerStateTerminated
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; s.Name == container && t != nil && (last == nil || t.FinishedAt.After(last.FinishedAt.Time)) {
				last = t
			}
		}
	}
	if last != nil {
		run.said = last.Message
	}
	return run, nil
}

// pruneBackupJobs deletes, with their pods, the finished Jobs beyond the
// newest backupJobsKept; jobs are newest first, and done tells which
// ended.
func pruneBackupJobs(ctx context.Context, c client.Client, jobs []*batchv1.Job, done func(i int) bool) error {
	finished := 0
	for i, j := range jobs {
		if !done(i) {
			continue
		}
		if finished++; finished <= backupJobsKept {
			continue
		}
		if err := c.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete the old backup job %s: %w", j.Name, err)
		}
	}
	return nil
}
