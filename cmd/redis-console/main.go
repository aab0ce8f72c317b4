// Command redis-console serves the web console and the REST API of one
// RedisEnterpriseCluster, over TLS, from a Deployment the operator makes
// beside the cluster. It reads the resource, its Secrets and its nodes'
// INFO, and acts only by annotating the resource. See docs/console.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/console"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "redis-console:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg               console.Config
		uiAddr, apiAddr   string
		certFile, keyFile string
	)
	flag.StringVar(&cfg.Namespace, "namespace", os.Getenv("NAMESPACE"), "Namespace of the RedisEnterpriseCluster (env NAMESPACE).")
	flag.StringVar(&cfg.Cluster, "cluster", os.Getenv("CLUSTER"), "Name of the RedisEnterpriseCluster (env CLUSTER).")
	flag.StringVar(&uiAddr, "ui-address", ":8443", "Address the web console listens on (HTTPS).")
	flag.StringVar(&apiAddr, "api-address", ":9443", "Address the REST API listens on (HTTPS).")
	flag.StringVar(&certFile, "tls-cert-file", "", "PEM certificate both listeners serve, read again when it changes; a self-signed one when unset.")
	flag.StringVar(&keyFile, "tls-key-file", "", "PEM key of --tls-cert-file.")
	flag.DurationVar(&cfg.Refresh, "refresh", console.DefaultRefresh, "How often the page refreshes, and how long a node's INFO is kept.")
	flag.DurationVar(&cfg.SessionTTL, "session-ttl", console.DefaultSessionTTL, "How long an unused session lasts (8h at most, used or not).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	if cfg.Namespace == "" || cfg.Cluster == "" {
		return errors.New("--namespace and --cluster are required")
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	cfg.Log = log.WithValues("namespace", cfg.Namespace, "cluster", cfg.Cluster)

	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := redisv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if cfg.Client, err = client.New(restCfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}

	getCert := (&console.CertFiles{CertFile: certFile, KeyFile: keyFile}).GetCertificate
	if certFile == "" {
		ui := redisenterprisecluster.UIServiceName(cfg.Cluster)
		cert, err := console.SelfSigned([]string{ui, ui + "." + cfg.Namespace + ".svc", "localhost"}, time.Now())
		if err != nil {
			return err
		}
		cfg.Log.Info("Serving a self-signed certificate: no --tls-cert-file given")
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
	}

	srv := console.New(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errs := make(chan error, 2)
	servers := []*http.Server{
		{Addr: uiAddr, Handler: srv.UI(), TLSConfig: console.TLSConfig(getCert), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
		{Addr: apiAddr, Handler: srv.API(), TLSConfig: console.TLSConfig(getCert), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
	}
	for _, s := range servers {
		cfg.Log.Info("Listening", "address", s.Addr)
		go func() { errs <- s.ListenAndServeTLS("", "") }()
	}
	select {
	case err = <-errs:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
