package main

// The stand-in of the official open-source Redis image, the
// RedisEnterpriseCluster's default (api/redislabs/v1alpha1: redis:7.0.15):
// Debian 12's open-source redis-server, 7.0.15, with redis-cli, under the
// official image's name at that version and under its -bookworm tag (the
// same image upstream, Debian 12 based), which a rolling update can move
// to. Like the upstream image, it runs redis-server as the redis user,
// with /data as its working folder; the operator gives it its
// configuration file and arguments. Nothing is built under Redis
// Enterprise's name (redislabs/redis): a cluster that names it runs this
// image, as the operator runs it in its place.
var redisRefs = []string{"docker.io/library/redis:7.0.15", "docker.io/library/redis:7.0.15-bookworm"}

func redisImage() image {
	files := baseFiles("redis:x:999:999:redis:/data:/usr/sbin/nologin\n", "redis:x:999:\n")
	files["data"] = file{dir: true, mode: 0o777}
	files["etc/redis"] = file{dir: true, mode: 0o755}
	return image{
		refs: redisRefs,
		packages: append([]string{"redis-server", "redis-tools", "libatomic1", "libjemalloc2", "liblzf1", "libssl3",
			"libsystemd0", "libcap2", "libgcrypt20", "libgpg-error0", "liblz4-1", "liblzma5", "libzstd1", "libstdc++6"}, libc...),
		files:      files,
		entrypoint: []string{"redis-server"},
		user:       "redis",
		ports:      []string{"6379/tcp"},
	}
}
