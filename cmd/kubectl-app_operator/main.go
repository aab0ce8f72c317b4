// Command kubectl-app_operator is the kubectl plugin of app-operator:
// `kubectl app-operator status|pause|resume|hibernate|wake|switchover|backup|report KIND NAME`. Installed on
// the PATH (or by krew), kubectl runs it for `kubectl app-operator`.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/plugin"
)

func main() {
	if err := root().Execute(); err != nil {
		os.Exit(1)
	}
}

// session is what every command needs: the cluster of the kubeconfig and
// the namespace to look in.
type session struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
	config    *rest.Config
	client    client.Client
	mapper    meta.RESTMapper
	namespace string
}

func root() *cobra.Command {
	s := &session{loading: clientcmd.NewDefaultClientConfigLoadingRules(), overrides: &clientcmd.ConfigOverrides{}}
	cmd := &cobra.Command{
		Use:          "app-operator",
		Short:        "Look at and steer the resources of app-operator",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl app-operator"},
		SilenceUsage: true,
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	flags := cmd.PersistentFlags()
	flags.StringVar(&s.loading.ExplicitPath, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	flags.StringVar(&s.overrides.CurrentContext, "context", "", "the kubeconfig context")
	flags.StringVarP(&s.overrides.Context.Namespace, "namespace", "n", "", "the namespace (default: the context's)")
	cmd.AddCommand(statusCmd(s), pauseCmd(s, true), pauseCmd(s, false), hibernateCmd(s, true), hibernateCmd(s, false), switchoverCmd(s), backupCmd(s), reportCmd(s))
	return cmd
}

// connect makes the client and finds the namespace.
func (s *session) connect() error {
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(s.loading, s.overrides)
	var err error
	if s.config, err = cfg.ClientConfig(); err != nil {
		return err
	}
	if s.namespace, _, err = cfg.Namespace(); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.config)
	if err != nil {
		return err
	}
	cached := memory.NewMemCacheClient(dc)
	s.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	scheme, err := plugin.Scheme()
	if err != nil {
		return err
	}
	s.client, err = client.New(s.config, client.Options{Scheme: scheme, Mapper: s.mapper})
	return err
}

// target connects and reads the resource args name.
func (s *session) target(ctx context.Context, args []string) (*plugin.Target, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	return plugin.Resolve(ctx, s.client, s.mapper, s.namespace, args)
}

func statusCmd(s *session) *cobra.Command {
	var lag bool
	cmd := &cobra.Command{
		Use:   "status KIND NAME",
		Short: "One screen of a resource: conditions, members and roles, certificates, backups, last events",
		Example: `  kubectl app-operator status rec redis-enterprise
  kubectl app-operator status etcd/example -n prod`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			screen, err := plugin.Gather(ctx, s.client, t.Kind.GVK.Kind, t.Obj)
			if err != nil {
				return err
			}
			if rec, ok := t.Obj.(*redisv1alpha1.RedisEnterpriseCluster); ok && lag {
				plugin.RedisLag(ctx, s.exec, rec, screen)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), plugin.Render(screen, time.Now()))
			return err
		},
	}
	cmd.Flags().BoolVar(&lag, "lag", true, "for a RedisEnterpriseCluster, ask each node for its replication offset (redis-cli INFO replication, by pods/exec) and show each replica's lag")
	return cmd
}

// exec runs command in a container of a pod, as kubectl exec does (over
// WebSocket), and returns its standard output.
func (s *session) exec(ctx context.Context, namespace, pod, container string, command []string) (string, error) {
	cs, err := kubernetes.NewForConfig(s.config)
	if err != nil {
		return "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, clientscheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(s.config, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec in %s: %w %s", pod, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func pauseCmd(s *session, pause bool) *cobra.Command {
	use, short := "resume KIND NAME", "Let the operator act on a paused resource again"
	if pause {
		use, short = "pause KIND NAME", "Stop every action of the operator on a resource (its status says Paused) until resume"
	}
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			what := "resumed"
			if pause {
				what = "paused"
				err = plugin.Pause(ctx, s.client, t.Obj)
			} else {
				err = plugin.Resume(ctx, s.client, t.Obj)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", t.Kind.Name(), t.Obj.GetName(), what)
			return err
		},
	}
}

func hibernateCmd(s *session, on bool) *cobra.Command {
	use, short, what := "wake KIND NAME", "Start a hibernated etcd or Redis cluster again (spec.hibernate: false)", "waking"
	if on {
		use, short, what = "hibernate KIND NAME", "Stop every pod of an etcd or Redis cluster, keeping its data (spec.hibernate: true)", "hibernating"
	}
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			if err := plugin.Hibernate(ctx, s.client, t.Obj, on); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s (kubectl app-operator status %s %s follows it)\n", t.Kind.Name(), t.Obj.GetName(), what, t.Kind.Name(), t.Obj.GetName())
			return err
		},
	}
}

func switchoverCmd(s *session) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "switchover KIND NAME [--to NODE]",
		Short: "Move the Redis primary or the etcd leader to a node in sync (--to; the best one when left out)",
		Example: `  kubectl app-operator switchover rec redis-enterprise --to redis-enterprise-2
  kubectl app-operator switchover etcd example`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			value, err := plugin.Switchover(ctx, s.client, t.Obj, to, time.Now())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: asked for a switchover (%s=%s); its Switchover condition says how it went\n",
				t.Kind.Name(), t.Obj.GetName(), switchover.Annotation, value)
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", switchover.Any, "the node (member) to move to; \""+switchover.Any+"\": the one furthest along of those in sync")
	return cmd
}

func backupCmd(s *session) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "backup KIND NAME",
		Short: "Back up a Redis or etcd cluster now, and wait for the outcome (--wait)",
		Long: `Back up a Redis or etcd cluster now, beside its schedule.

A RedisEnterpriseCluster (with spec.backup) gets the annotation ` + redisv1alpha1.BackupNowAnnotation + ` with a new
request ID; the operator starts a backup Job for it and records the request in
status.backupInfo.lastRequest. An EtcdCluster gets a one-shot EtcdBackup
(NAME-now-<unix time>) that stores where its newest EtcdBackup does.`,
		Example: `  kubectl app-operator backup rec redis-enterprise
  kubectl app-operator backup etcd example --wait=false`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			request, err := plugin.Backup(ctx, s.client, t.Obj, time.Now())
			if err != nil {
				return err
			}
			watched := t.Obj
			if _, ok := t.Obj.(*etcdv1beta2.EtcdCluster); ok {
				watched = &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: t.Obj.GetNamespace(), Name: request}}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: created EtcdBackup %s\n", t.Kind.Name(), t.Obj.GetName(), request)
			} else {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: asked for a backup (%s=%s)\n", t.Kind.Name(), t.Obj.GetName(), redisv1alpha1.BackupNowAnnotation, request)
			}
			if err != nil || !wait {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			w := &plugin.BackupWatch{Request: request}
			failed, message, err := w.Wait(ctx, s.client, watched, 2*time.Second)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "backup %s\n", message); err != nil {
				return err
			}
			if failed {
				return errors.New("the backup did not succeed")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the backup ended, and say how")
	cmd.Flags().DurationVar(&timeout, "timeout", 15*time.Minute, "how long --wait waits")
	return cmd
}

func reportCmd(s *session) *cobra.Command {
	op := plugin.Operator{Selector: map[string]string{"app.kubernetes.io/name": "app-operator", "app.kubernetes.io/component": "controller-manager"}}
	var out string
	cmd := &cobra.Command{
		Use:   "report KIND NAME",
		Short: "Write a support archive: the resource, what it owns (Secrets' keys only), events, the operator's log lines about it",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := s.target(ctx, args)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(s.config)
			if err != nil {
				return err
			}
			logs := func(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
				return cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
			}
			if out == "" {
				out = fmt.Sprintf("%s-%s-%s.tar.gz", t.Kind.Name(), t.Obj.GetNamespace(), t.Obj.GetName())
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			scheme, err := plugin.Scheme()
			if err != nil {
				return err
			}
			names, err := plugin.Report(ctx, s.client, scheme, logs, op, t, time.Now(), f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d files\n", out, len(names))
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive to write (default: KIND-NAMESPACE-NAME.tar.gz)")
	cmd.Flags().StringVar(&op.Namespace, "operator-namespace", "app-operator-system", "the namespace the operator runs in")
	cmd.Flags().StringVar(&op.Container, "operator-container", "manager", "the operator's container")
	return cmd
}
