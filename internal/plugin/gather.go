package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// lastEvents is how many of the resource's events status shows, and
// lastChanges how many changes of a Redis cluster's primary.
const (
	lastEvents  = 8
	lastChanges = 3
)

// Gather reads what status shows of obj, a resource of one of the
// operator's kinds already read from the cluster: its children, Secrets
// and events are read with c. A Secret the user may not read is shown as
// such, not an error.
func Gather(ctx context.Context, c client.Reader, kind string, obj client.Object) (*Screen, error) {
	s := &Screen{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Created: obj.GetCreationTimestamp().Time,
		Generation: obj.GetGeneration(), Paused: conditions.IsPaused(obj.GetAnnotations())}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if status, ok := u["status"].(map[string]any); ok {
		if g, ok := status["observedGeneration"].(int64); ok {
			s.ObservedGeneration = g
		}
		if raw, ok := status["conditions"].([]any); ok {
			for _, r := range raw {
				var cond metav1.Condition
				if m, ok := r.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
					s.Conditions = append(s.Conditions, cond)
				}
			}
		}
	}
	switch o := obj.(type) {
	case *redisv1alpha1.RedisEnterpriseCluster:
		err = gatherRedis(ctx, c, o, s)
	case *etcdv1beta2.EtcdCluster:
		err = gatherEtcd(ctx, c, o, s)
	case *etcdv1beta2.EtcdBackup:
		s.Summary = []Field{{"Cluster", o.Spec.ClusterName}}
		s.Backups = etcdBackupLines(o)
	case *etcdv1beta2.EtcdRestore:
		s.Summary = []Field{{"Cluster", o.Spec.EtcdCluster.Name}, {"Snapshot", cmp.Or(o.Status.Backup, "-")}}
	}
	if err != nil {
		return nil, err
	}
	s.Events, err = events(ctx, c, obj)
	return s, err
}

// gatherRedis fills s with the Redis cluster's nodes, certificate and
// backups.
func gatherRedis(ctx context.Context, c client.Reader, o *redisv1alpha1.RedisEnterpriseCluster, s *Screen) error {
	s.Summary = []Field{{"State", cmp.Or(string(o.Status.State), "-")}, {"Primary", cmp.Or(o.Status.Primary, "none")},
		{"Nodes", fmt.Sprintf("%d wanted, %d in the status", o.Spec.Nodes, len(o.Status.Nodes))}}
	pods, err := podsOf(ctx, c, o.Namespace, redisenterprisecluster.Selector(o.Name))
	if err != nil {
		return err
	}
	t := &Table{Header: []string{"NODE", "ROLE", "HEALTHY", "POD", "RESTARTS", "NODE NAME"}}
	for _, n := range o.Status.Nodes {
		t.Rows = append(t.Rows, append([]string{n.Name, n.Role, yesNo(n.Healthy)}, podColumns(pods[n.Name])...))
	}
	s.Members = t
	for _, ch := range o.Status.PrimaryHistory[:min(lastChanges, len(o.Status.PrimaryHistory))] {
		s.Changes = append(s.Changes, Change{Time: ch.Time.Time, From: ch.From, To: ch.To, Reason: ch.Reason})
	}
	if o.Spec.TLS != nil {
		s.Certificates = append(s.Certificates, certificate(ctx, c, o.Namespace, redisenterprisecluster.TLSSecretName(o.Name, o.Spec.TLS)))
	}
	if o.Spec.Backup != nil {
		info := o.Status.BackupInfo
		if info == nil {
			info = &redisv1alpha1.BackupInfo{}
		}
		s.Backups = []Field{{"Every", o.Spec.Backup.Every().String()}, {"Last", cmp.Or(info.BackupStatus, "none yet")}}
		if info.LastBackupTime != nil {
			s.Backups = append(s.Backups, Field{"Succeeded", info.LastBackupTime.UTC().Format(time.RFC3339) + " " + info.LastBackup})
			s.Backups = append(s.Backups, Field{"Next due", info.LastBackupTime.Add(o.Spec.Backup.Every()).UTC().Format(time.RFC3339)})
		}
		if info.BackupFailureReason != "" {
			s.Backups = append(s.Backups, Field{"Failure", info.BackupFailureReason})
		}
	}
	return nil
}

// gatherEtcd fills s with the etcd cluster's members, certificates and
// backups (the EtcdBackups that name it).
func gatherEtcd(ctx context.Context, c client.Reader, o *etcdv1beta2.EtcdCluster, s *Screen) error {
	s.Summary = []Field{{"Size", fmt.Sprintf("%d wanted, %d members", o.Spec.Size, o.Status.Size)}, {"Leader", cmp.Or(o.Status.Leader, "none")},
		{"Version", fmt.Sprintf("%s running, %s wanted", cmp.Or(o.Status.CurrentVersion, "-"), o.Spec.Version)}}
	if o.Status.ClusterID != "" {
		s.Summary = append(s.Summary, Field{"Cluster ID", o.Status.ClusterID})
	}
	pods, err := podsOf(ctx, c, o.Namespace, etcdcluster.Selector(o.Name))
	if err != nil {
		return err
	}
	t := &Table{Header: []string{"MEMBER", "ID", "ROLE", "HEALTHY", "VERSION", "POD", "RESTARTS", "NODE NAME"}}
	for _, m := range o.Status.Members {
		role := "follower"
		switch {
		case m.Leader:
			role = "leader"
		case m.Learner:
			role = "learner"
		}
		t.Rows = append(t.Rows, append([]string{m.Name, cmp.Or(m.ID, "-"), role, yesNo(m.Healthy), cmp.Or(m.Version, "-")}, podColumns(pods[m.Name])...))
	}
	s.Members = t
	if o.Spec.TLS != nil {
		peer, server, operator := o.Spec.TLSSecrets(o.Name)
		for _, name := range []string{peer, server, operator} {
			s.Certificates = append(s.Certificates, certificate(ctx, c, o.Namespace, name))
		}
	}
	backups := &etcdv1beta2.EtcdBackupList{}
	if err := c.List(ctx, backups, client.InNamespace(o.Namespace)); err != nil {
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("list EtcdBackups: %w", err)
		}
		s.Backups = []Field{{"EtcdBackups", "not readable: " + err.Error()}}
		return nil
	}
	for i := range backups.Items {
		if b := &backups.Items[i]; b.Spec.ClusterName == o.Name {
			for _, f := range etcdBackupLines(b) {
				s.Backups = append(s.Backups, Field{b.Name + " " + f.Label, f.Value})
			}
		}
	}
	return nil
}

// etcdBackupLines says what an EtcdBackup last did.
func etcdBackupLines(b *etcdv1beta2.EtcdBackup) []Field {
	var out []Field
	if b.Status.LastSuccessDate != nil {
		out = append(out, Field{"succeeded", fmt.Sprintf("%s revision %d %s", b.Status.LastSuccessDate.UTC().Format(time.RFC3339), b.Status.EtcdRevision, b.Status.LastBackup)})
	}
	if !b.Status.Succeeded && b.Status.Reason != "" {
		out = append(out, Field{"failed", b.Status.Reason})
	}
	if len(out) == 0 {
		out = append(out, Field{"last", "none yet"})
	}
	return out
}

// podsOf returns the pods of selector in namespace, by name.
func podsOf(ctx context.Context, c client.Reader, namespace string, selector map[string]string) (map[string]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// podColumns are a member's pod's columns: ready or its phase, the
// restarts of its containers, its node.
func podColumns(p *corev1.Pod) []string {
	if p == nil {
		return []string{"missing", "-", "-"}
	}
	state := string(p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			state = "Ready"
		}
	}
	if p.DeletionTimestamp != nil {
		state = "Terminating"
	}
	var restarts int32
	for _, c := range p.Status.ContainerStatuses {
		restarts += c.RestartCount
	}
	return []string{state, strconv.Itoa(int(restarts)), cmp.Or(p.Spec.NodeName, "-")}
}

// certificate reads the leaf certificate of the Secret name.
func certificate(ctx context.Context, c client.Reader, namespace, name string) Certificate {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return Certificate{Secret: name, Problem: "you may not read this Secret"}
		case apierrors.IsNotFound(err):
			return Certificate{Secret: name, Problem: "no such Secret"}
		}
		return Certificate{Secret: name, Problem: err.Error()}
	}
	leaf, err := tlssecret.Leaf(secret.Data)
	if err != nil {
		return Certificate{Secret: name, Problem: err.Error()}
	}
	return Certificate{Secret: name, NotAfter: leaf.NotAfter, Subject: leaf.Subject.String()}
}

// events returns obj's last events, newest last.
func events(ctx context.Context, c client.Reader, obj client.Object) ([]Event, error) {
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list events: %w", err)
	}
	var out []Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID != obj.GetUID() {
			continue
		}
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		out = append(out, Event{Last: last, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count})
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Last.Compare(b.Last) })
	if len(out) > lastEvents {
		out = out[len(out)-lastEvents:]
	}
	return out, nil
}

// yesNo is "yes" or "no".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
