package redisenterprisecluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// IsLive reports whether Redis takes the parameter key at run time (CONFIG
// SET): a change of it is applied to the running nodes and does not roll
// the pods.
func IsLive(key string) bool { return slices.Contains(redisv1alpha1.LiveParameters, key) }

// LiveConfig returns the parameters of spec.redisConfig that the running
// nodes take with CONFIG SET.
func LiveConfig(spec *redisv1alpha1.RedisEnterpriseClusterSpec) map[string]string {
	out := map[string]string{}
	for k, v := range spec.RedisConfig {
		if IsLive(k) {
			out[k] = string(v)
		}
	}
	return out
}

// parameterLines returns the lines of redis.conf for spec.redisConfig:
// restart, those of parameters Redis reads only at start, which the pod
// template's hash covers (a change rolls the pods), and live, those of
// parameters Redis takes at run time, which it does not: they reach the
// running nodes through CONFIG SET, and a node that restarts reads them
// from the ConfigMap. A parameter the operator sets itself, or one it
// does not know, is refused (the API refuses both).
func parameterLines(cfg redisv1alpha1.RedisConfig) (restart, live string, err error) {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var r, l strings.Builder
	for _, k := range keys {
		v := string(cfg[k])
		switch {
		case strings.HasPrefix(k, "tls-") || slices.Contains(redisv1alpha1.OwnedParameters, k):
			return "", "", fmt.Errorf("spec.redisConfig.%s: the operator sets this parameter itself", k)
		case strings.ContainsAny(v, "\r\n\"'\\"):
			return "", "", fmt.Errorf("spec.redisConfig.%s: the value holds a line break, a quote or a backslash", k)
		case IsLive(k):
			fmt.Fprintf(&l, "%s %s\n", k, quoted(v))
		case slices.Contains(redisv1alpha1.RestartParameters, k):
			fmt.Fprintf(&r, "%s %s\n", k, quoted(v))
		default:
			return "", "", fmt.Errorf("spec.redisConfig.%s: not a parameter the operator can set", k)
		}
	}
	if r.Len() > 0 {
		restart = "# spec.redisConfig, read at start (a change replaces the pods):\n" + r.String()
	}
	if l.Len() > 0 {
		live = "# spec.redisConfig, also set on the running nodes (CONFIG SET), outside\n# the pods' template hash:\n" + l.String()
	}
	return restart, live, nil
}

// quoted is v as redis.conf reads it: an empty value is "".
func quoted(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// staleConfig returns the node to configure next: the primary, then the
// first replica, of the nodes that answer and run parameters of
// spec.redisConfig at other values.
func staleConfig(primary Node, nodes []Node) (Node, bool) {
	if len(primary.StaleConfig) > 0 {
		return primary, true
	}
	for _, n := range nodes {
		if n.Answered && n.Pod == PodReady && len(n.StaleConfig) > 0 {
			return n, true
		}
	}
	return Node{}, false
}
