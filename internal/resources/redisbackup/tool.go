// Package redisbackup builds what backs up and restores the dataset of a
// RedisEnterpriseCluster: the Jobs that run the Redis snapshot tool and
// its arguments for a backup location. Like every builder, it is pure.
package redisbackup

const (
	// Tool is the Redis snapshot tool's path in the operator's image.
	Tool = "/redis-snapshot"
	// ContainerName is the name of the container that runs the tool, in a
	// backup Job and as the restoring init container of a node.
	ContainerName = "snapshot"
	// ExitPermanent is the tool's exit code for a failure that trying
	// again cannot mend (access denied, no such bucket): the Job fails at
	// once rather than retry.
	ExitPermanent = 2
	// PasswordEnv and UsernameEnv name the environment variables the tool
	// reads the credentials of the Redis nodes from.
	PasswordEnv = "REDIS_PASSWORD"
	UsernameEnv = "REDIS_USERNAME"
	// PodNameEnv is the environment variable with the pod's name, which a
	// restore compares with --only-pod.
	PodNameEnv = "POD_NAME"
	// RestoredEnv is the environment variable, "true" once the cluster has
	// had a primary, that tells a restore the cluster was restored already:
	// a node that starts empty later (persistence off) does not load the
	// old backup again. It comes from the cluster's ConfigMap, key
	// RestoredKey, read when the pod starts.
	RestoredEnv = "CLUSTER_RESTORED"
	RestoredKey = "restored"
)
