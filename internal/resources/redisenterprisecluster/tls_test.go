package redisenterprisecluster

import (
	"slices"
	"strings"
	"testing"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

// With spec.tls every node serves TLS alone on its port, replicates over
// TLS and reads the Secret's files where they are mounted; without it the
// configuration is what it was before TLS existed (the golden files of the
// samples hold it), so that no running cluster rolls.
func TestNodesWithTLSServeTLSAloneFromTheSecretsFiles(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	plain := &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}
	secure := &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "r-tls"}}

	c, err := Build(owner, secure, Input{})
	if err != nil {
		t.Fatal(err)
	}
	conf := c.ConfigMap.Data[ConfigFile]
	for _, line := range []string{"port 0", "tls-port 6379", "tls-cert-file /etc/redis-tls/tls.crt", "tls-key-file /etc/redis-tls/tls.key",
		"tls-ca-cert-file /etc/redis-tls/ca.crt", "tls-replication yes", "tls-auth-clients optional"} {
		if !slices.Contains(strings.Split(conf, "\n"), line) {
			t.Errorf("redis.conf has no line %q:\n%s", line, conf)
		}
	}
	pod := c.StatefulSet.Spec.Template.Spec
	var secret string
	for _, v := range pod.Volumes {
		if v.Secret != nil && *v.Name == tlsVolume {
			secret = *v.Secret.SecretName
		}
	}
	mounted := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1ac.VolumeMountApplyConfiguration) bool {
		return *m.Name == tlsVolume && *m.MountPath == TLSDir
	})
	if secret != "r-tls" || !mounted {
		t.Errorf("TLS volume of Secret %q, mounted at %s: %v; want r-tls there", secret, TLSDir, mounted)
	}

	p, err := Build(owner, plain, Input{})
	if err != nil {
		t.Fatal(err)
	}
	if conf := p.ConfigMap.Data[ConfigFile]; !strings.Contains(conf, "\nport 6379\n") || strings.Contains(conf, "tls") {
		t.Errorf("redis.conf without spec.tls:\n%s", conf)
	}
	if p.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] == c.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] {
		t.Error("the configuration's hash does not change with TLS")
	}
}
