// Package backup holds what the backups of every kind share: their Jobs
// (listed, read and pruned), their schedule, and the events that say how
// one ended. Each kind builds its own Job (internal/resources/etcdbackup,
// internal/resources/redisbackup) and reads its tool's result
// (internal/backuprun).
package backup

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

	"github.com/app-operator/app-operator/internal/backuprun"
)

// JobsKept is how many finished backup Jobs of a resource stay, for
// `kubectl logs`: the older ones are deleted. The status keeps what the
// last ones said.
const JobsKept = 3

// JobsOf lists the Jobs of owner's backups (those with labels that
// owner controls), newest first.
func JobsOf(ctx context.Context, c client.Reader, owner client.Object, labels map[string]string) ([]*batchv1.Job, error) {
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

// ReadRun reads what the backup Job j did: running, or done, with
// why it failed (from its condition) and what its tool said, which parse
// reads from the termination message of the tool's container (named
// container) in the last pod that ended. Started is when the Job was
// created.
func ReadRun[R backuprun.Result](ctx context.Context, c client.Reader, j *batchv1.Job, container string, parse func(string) (R, error)) (backuprun.Run[R], error) {
	run := backuprun.Run[R]{Job: j.Name, Started: j.CreationTimestamp}
	for _, cond := range j.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			run.Done, run.Succeeded = true, true
		case batchv1.JobFailed:
			run.Done, run.Message = true, fmt.Sprintf("Job %s failed: %s: %s", j.Name, cond.Reason, cond.Message)
		}
	}
	if !run.Done {
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
		if r, err := parse(last.Message); err == nil {
			run.Result = &r
		}
	}
	return run, nil
}

// PruneJobs deletes, with their pods, the finished Jobs beyond the
// newest backupJobsKept; jobs are newest first, and done tells which
// ended.
func PruneJobs(ctx context.Context, c client.Client, jobs []*batchv1.Job, done func(i int) bool) error {
	finished := 0
	for i, j := range jobs {
		if !done(i) {
			continue
		}
		if finished++; finished <= JobsKept {
			continue
		}
		if err := c.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete the old backup job %s: %w", j.Name, err)
		}
	}
	return nil
}
