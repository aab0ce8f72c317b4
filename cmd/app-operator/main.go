// Command app-operator runs the controllers of every app-operator API in one
// manager. `app-operator preview -f FILE` prints the children it would apply
// for the resources in FILE, without a cluster.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/app-operator/app-operator/internal/backup"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/app-operator/app-operator/api/podsecurity"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/metricsauth"
	"github.com/app-operator/app-operator/internal/permissions"
	"github.com/app-operator/app-operator/internal/preview"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// DefaultWorkers is the default of --max-concurrent-reconciles.
const DefaultWorkers = 4

func main() {
	sampleHeapOnlyIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "preview" {
		os.Exit(preview.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	var (
		metricsAddr        string
		probeAddr          string
		secureMetrics      bool
		enableHTTP2        bool
		leaderElect        bool
		leaderElectionNS   string
		watchNamespaces    string
		securityProfile    string
		msd                microservicedeploy.Options
		permCheckTimeout   time.Duration
		redisFailoverAfter time.Duration
		etcdJoinTimeout    time.Duration
		workers            int
		statefulWorkers    int
		apiQPS             float64
		apiBurst           int
		apiCompression     bool
		pprofAddr          string
		leaseDuration      time.Duration
		renewDeadline      time.Duration
		retryPeriod        time.Duration
		snapshotImage      string
		redisImage         string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0",
		"Address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP). 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the liveness and readiness probes bind to.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS, behind Kubernetes authentication and authorization.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"Serve metrics and webhooks over HTTP/2 as well. Off by default: HTTP/2 Rapid Reset and Stream Cancellation.")
	flag.BoolVar(&leaderElect, "leader-elect", false,
		"Elect a leader through a Lease so that only one replica reconciles at a time.")
	flag.StringVar(&leaderElectionNS, "leader-election-namespace", "",
		"Namespace of the leader-election Lease; defaults to the namespace the operator runs in.")
	flag.DurationVar(&leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a standby waits after the leader's last renewal before it takes the Lease over.")
	flag.DurationVar(&renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew the Lease before it steps down; shorter than the lease duration.")
	flag.DurationVar(&retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How often the leader renews the Lease and a standby tries to take it.")
	flag.StringVar(&watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	flag.StringVar(&securityProfile, "default-security-profile", string(podsecurity.Baseline),
		"Pod Security Standard the generated pods are built to pass when a resource does not choose: Baseline or Restricted.")
	flag.StringVar(&msd.BaseDomain, "microservice-base-domain", "",
		"DNS domain MicroServiceDeploy instances are exposed under, through an Ingress at <msName>-<path>.<domain>. Empty exposes none.")
	flag.StringVar(&msd.IngressClassName, "microservice-ingress-class", "",
		"Ingress class of the MicroServiceDeploy Ingresses; empty uses the cluster's default class.")
	flag.StringVar(&msd.AuthURL, "microservice-auth-url", "",
		"External authentication endpoint the Ingress of a MicroServiceDeploy with needAuth checks every request with. Empty: such instances are not exposed.")
	flag.StringVar(&msd.AuthURLAnnotation, "microservice-auth-url-annotation", microservicedeploy.DefaultAuthURLAnnotation,
		"Ingress annotation that carries the external authentication endpoint (the Ingress controller's).")
	flag.DurationVar(&redisFailoverAfter, "redis-failover-after", controller.DefaultRedisFailoverAfter,
		"How long a RedisEnterpriseCluster's primary must be down, with no replica still streaming from it, before a replica replaces it; at least 12s (Redis's min-replicas-max-lag, 10s, and 2s more).")
	flag.DurationVar(&etcdJoinTimeout, "etcd-join-timeout", etcdcluster.DefaultJoinTimeout,
		"How long an EtcdCluster's new member may take to join (start, or as a learner catch up and answer) before it is removed and added again.")
	flag.DurationVar(&permCheckTimeout, "permission-check-timeout", 45*time.Second,
		"How long the start-up permission check may retry an API server that does not answer before the manager exits.")
	// The default is measured by `make bench` (docs/performance.md).
	flag.IntVar(&workers, "max-concurrent-reconciles", DefaultWorkers,
		"Resources of one kind reconciled at once (each kind has its own workers).")
	// The default is measured by `make bench-stateful` (docs/performance.md).
	flag.IntVar(&statefulWorkers, "max-concurrent-stateful-reconciles", controller.DefaultStatefulReconciles,
		"Resources of one data-service kind (RedisEnterpriseCluster, EtcdCluster, EtcdBackup, EtcdRestore) reconciled at once: their passes wait on the members over the network; at least --max-concurrent-reconciles.")
	// No client-side rate limit by default: API Priority and Fairness on the
	// API server shares its capacity among clients, as it does for every
	// controller of the control plane; a client-side limit would only queue
	// requests the server could serve.
	flag.Float64Var(&apiQPS, "kube-api-qps", -1,
		"Requests per second the operator sends to the API server at most; a negative value sets no client-side limit and leaves it to API Priority and Fairness.")
	flag.IntVar(&apiBurst, "kube-api-burst", 0,
		"Burst of requests above --kube-api-qps; with a positive --kube-api-qps, 0 means twice that rate.")
	flag.BoolVar(&apiCompression, "kube-api-compression", false,
		"Accept gzip-compressed answers from the API server. Off by default: for an operator next to its API server, compressing every watch event costs CPU on both sides to save bandwidth it does not lack.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0",
		"Address the Go profiler (net/http/pprof) binds to, e.g. 127.0.0.1:6060; 0 disables it. For benchmarks and debugging only. Heap profiles hold samples only when GODEBUG sets memprofilerate (e.g. GODEBUG=memprofilerate=524288, Go's default).")
	flag.StringVar(&snapshotImage, "snapshot-image", cmp.Or(os.Getenv("SNAPSHOT_IMAGE"), backup.DefaultSnapshotImage),
		"The image of the snapshot tools (/etcd-snapshot, /redis-snapshot) that backup Jobs and restores run, and of the RedisEnterpriseCluster consoles (/redis-console): the operator's own image, which carries them (default: $SNAPSHOT_IMAGE).")
	flag.StringVar(&redisImage, "redis-image", cmp.Or(os.Getenv("REDIS_IMAGE"), redisenterprisecluster.DefaultImage),
		"The open-source Redis image a RedisEnterpriseCluster's nodes run when its spec leaves the default image or names Redis Enterprise's (redislabs/redis), e.g. a private registry's mirror of redis:7.0.15 (default: $REDIS_IMAGE).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	if p := podsecurity.Profile(securityProfile); p != podsecurity.Baseline && p != podsecurity.Restricted {
		log.Error(fmt.Errorf("unknown profile %q", securityProfile), "--default-security-profile must be Baseline or Restricted")
		os.Exit(2)
	}

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		metricsOpts.FilterProvider = metricsauth.Filter
	}
	cacheOpts := cache.Options{ByObject: controller.CacheByObject()}
	var namespaces []string
	for _, ns := range strings.Split(watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}

	if redisFailoverAfter < controller.MinRedisFailoverAfter {
		log.Error(fmt.Errorf("got %s", redisFailoverAfter), "--redis-failover-after must be at least "+controller.MinRedisFailoverAfter.String()+
			": a primary cut off from its replicas takes writes for up to min-replicas-max-lag ("+redisenterprisecluster.MinReplicasMaxLag.String()+"), and a replica promoted sooner would lose them")
		os.Exit(2)
	}
	if workers < 1 {
		log.Error(fmt.Errorf("got %d", workers), "--max-concurrent-reconciles must be at least 1")
		os.Exit(2)
	}
	if statefulWorkers < 1 {
		log.Error(fmt.Errorf("got %d", statefulWorkers), "--max-concurrent-stateful-reconciles must be at least 1")
		os.Exit(2)
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = float32(apiQPS)
	cfg.Burst = apiBurst
	cfg.DisableCompression = !apiCompression
	if apiQPS > 0 && apiBurst <= 0 {
		cfg.Burst = int(2 * apiQPS)
	}
	ctx := ctrl.SetupSignalHandler()
	// A missing RBAC rule would leave the operator running but unable to
	// act: refuse to start instead, naming what is missing. The check
	// retries an API server that does not answer, but not for ever: if it
	// cannot finish within the timeout the manager exits non-zero, and the
	// kubelet's restart backoff takes over. Starting without the check
	// would only move the failure to the controllers (a cache that cannot
	// sync, reconciles that fail), less clearly; waiting for ever would
	// hide it. The default stays below the window of the liveness probe of
	// config/manager and the chart (which cannot answer before the
	// manager starts), so that the log says why the container stopped.
	checkCtx, cancel := context.WithTimeout(ctx, permCheckTimeout)
	checked, err := checkPermissions(checkCtx, cfg, namespaces)
	cancel()
	switch {
	case ctx.Err() != nil:
		log.Info("Stopped during the permission check")
		return
	case err != nil:
		log.Error(err, "Unable to check the operator's permissions; exiting (see --permission-check-timeout)", "timeout", permCheckTimeout.String())
		os.Exit(1)
	case len(checked.Missing) > 0:
		log.Error(errors.New("missing RBAC permissions"), "The operator's identity lacks permissions its controllers need; grant the rules of config/rbac/role.yaml", "missing", checked.Missing)
		os.Exit(1)
	}
	// A watched namespace that was deleted takes its Role and RoleBinding
	// with it: the operator could not list anything there, and its cache
	// would never sync. Leave it out, with a warning, and watch the rest.
	for _, ns := range checked.AbsentNamespaces {
		log.Info("Warning: a watched namespace does not exist or is being deleted; not watching it until the operator restarts", "namespace", ns)
		namespaces = slices.DeleteFunc(namespaces, func(s string) bool { return s == ns })
	}
	if len(checked.AbsentNamespaces) > 0 && len(namespaces) == 0 {
		log.Error(errors.New("no watched namespace exists"), "None of the namespaces of --watch-namespaces exists; nothing to watch", "namespaces", checked.AbsentNamespaces)
		os.Exit(1)
	}
	if len(namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  controller.NewScheme(),
		Cache:                   cacheOpts,
		Metrics:                 metricsOpts,
		WebhookServer:           webhook.NewServer(webhook.Options{TLSOpts: tlsOpts}),
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "app-operator.app.example.com",
		LeaderElectionNamespace: leaderElectionNS,
		// Step down at once on SIGTERM so a new leader takes over without
		// waiting for the Lease to expire.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
	})
	if err != nil {
		log.Error(err, "Unable to create manager")
		os.Exit(1)
	}
	opts := controller.Options{
		Defaults:                resources.Defaults{SecurityProfile: podsecurity.Profile(securityProfile)},
		MicroServiceDeploy:      msd,
		MaxConcurrentReconciles: workers,
		StatefulReconciles:      statefulWorkers,
		RedisFailoverAfter:      redisFailoverAfter,
		EtcdJoinTimeout:         etcdJoinTimeout,
		SnapshotImage:           snapshotImage,
		RedisImage:              redisImage,
	}
	if err := controller.SetupWithManager(mgr, opts); err != nil {
		log.Error(err, "Unable to set up controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Unable to set up ready check")
		os.Exit(1)
	}

	log.Info("Starting manager")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager exited with an error")
		os.Exit(1)
	}
}

// checkPermissions runs the start-up permission check as the manager's own
// identity.
func checkPermissions(ctx context.Context, cfg *rest.Config, namespaces []string) (permissions.Result, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return permissions.Result{}, err
	}
	return permissions.Check(ctx, cs, namespaces)
}
