package v1alpha1

// ProprietaryRepository is Redis Enterprise's image, which is not open
// source and takes other arguments than redis-server: a cluster that names
// it runs the operator's open-source Redis image instead.
const ProprietaryRepository = "redislabs/redis"

// The condition of a RedisEnterpriseCluster that says its image was
// replaced, and its reason (also the reason of the event).
const (
	// ConditionImageReplaced is True while spec.redisEnterpriseImageSpec
	// names Redis Enterprise's image and the nodes run the operator's
	// open-source image instead; absent otherwise.
	ConditionImageReplaced = "ImageReplaced"
	// ReasonProprietaryImage: spec.redisEnterpriseImageSpec.repository is
	// ProprietaryRepository.
	ReasonProprietaryImage = "ProprietaryImage"
)
