package redis

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller/stateful"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// consoleCertificate issues, for a cluster without spec.tls whose console
// runs, the console's certificate (for the `<name>-ui` Service's names)
// into the Secret `<name>-ui-tls`, from a CA of the console's own, and
// renews it a month before it expires (see stateful.IssueTLS). With
// spec.tls, the console serves the nodes' certificate, which names the
// Service too. A certificate that cannot be issued holds back nothing
// else: the console's pod waits for its Secret, and the next pass tries
// again.
func (ops *redisOps) consoleCertificate(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) {
	if !redisenterprisecluster.ConsoleEnabled(&o.Spec) {
		return
	}
	cert := stateful.IssuedCert{Secret: redisenterprisecluster.ConsoleTLSSecretName(o.Name), CN: redisenterprisecluster.UIServiceName(o.Name),
		Hosts: redisenterprisecluster.ConsoleHosts(o.Name, o.Namespace)}
	err := stateful.IssueTLS(ctx, ops.client, ops.apiReader, resources.OwnerOf(o, gvk), resources.Labels(redisenterprisecluster.ConsoleSelector(o.Name)),
		redisenterprisecluster.ConsoleTLSCASecretName(o.Name), []stateful.IssuedCert{cert}, ops.clock.Now(), nil)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("The console's certificate could not be issued: its pod waits for it", "error", err.Error())
	}
}
