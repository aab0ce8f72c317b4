package main

// The RedisEnterpriseCluster sample's image, redislabs/redis:5.4.0-19, is
// Redis Enterprise, which is not open source: its stand-in is Debian 12's
// open-source redis-server (7.0.x) with redis-cli, under the sample's name
// and under a second tag that a rolling update can move to. Like the
// upstream redis image, it runs redis-server as the redis user, with /data
// as its working folder; the operator gives it its configuration file and
// arguments.
var redisRefs = []string{"docker.io/redislabs/redis:5.4.0-19", "docker.io/redislabs/redis:5.4.0-20"}

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
