package cluster

// ManagerBuildTags are the build tags of every build of the manager, the
// Makefile's and the Dockerfile's included: grpcnotrace keeps gRPC (which
// the etcd client uses) from linking golang.org/x/net/trace and with it
// html/template, whose calls of methods by name make the linker keep every
// exported method of every type; without them the manager is about 35 MB
// smaller, and that much less of it is mapped into memory.
const ManagerBuildTags = "grpcnotrace"
