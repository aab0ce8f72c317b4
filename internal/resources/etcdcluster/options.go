package etcdcluster

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// DefaultResources are the etcd container's requests and limits when
// spec.pod.resources is left out: equal, so that the members are
// Guaranteed and the last pods a node under pressure evicts, and small
// enough that two clusters of five members fit on a node of two cores
// (1.9 of them allocatable), as the real-pods suite runs them.
var DefaultResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
}

// containerResources are the etcd container's requests and limits:
// spec.pod.resources, or DefaultResources.
func containerResources(spec *etcdv1beta2.EtcdClusterSpec) *corev1ac.ResourceRequirementsApplyConfiguration {
	r := DefaultResources
	if spec.Pod != nil && spec.Pod.Resources != nil {
		r = *spec.Pod.Resources
	}
	ac := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		ac.WithRequests(r.Requests)
	}
	if len(r.Limits) > 0 {
		ac.WithLimits(r.Limits)
	}
	return ac
}

// stringOptions are the settings of etcd's configuration file that it
// reads as strings although their values look like numbers.
var stringOptions = map[string]bool{"auto-compaction-retention": true}

// ConfigFile is a member's start-up file: c, and spec.etcdOptions as the
// settings of the same names. etcd reads no flag beside a configuration
// file, so each option --name=value becomes the setting name: value, a
// number or true/false as such (the type etcd's file reads), anything
// else a string. Admission refuses the options of the settings in c.
func ConfigFile(c Config, options []etcdv1beta2.EtcdOption) string {
	if len(options) == 0 {
		// A struct of strings always marshals.
		b, _ := yaml.Marshal(c)
		return string(b)
	}
	b, _ := json.Marshal(c)
	file := map[string]any{}
	_ = json.Unmarshal(b, &file)
	for _, o := range options {
		name, value := o.Flag()
		if _, owned := file[name]; owned {
			continue
		}
		file[name] = optionValue(name, value)
	}
	out, _ := yaml.Marshal(file)
	return string(out)
}

// optionValue is value as etcd's configuration file takes the setting
// name.
func optionValue(name, value string) any {
	if stringOptions[name] {
		return value
	}
	// Only true and false: ParseBool takes 1, t and TRUE too.
	if b, err := strconv.ParseBool(value); err == nil && strconv.FormatBool(b) == value {
		return b
	}
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return n
	}
	if n, err := strconv.ParseUint(value, 10, 64); err == nil {
		return n
	}
	return value
}
