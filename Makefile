# app-operator: one manager for every app-operator kind (AppService,
# WebService, MicroServiceDeploy, Memcached, MyWeb, RedisEnterpriseCluster and
# EtcdCluster). `make help` lists the targets.

# Tool versions. The cluster's components (etcd, Kubernetes, kwok,
# metrics-server, CoreDNS) and Helm are pinned in hack/controlplane/go.mod.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0

LOCALBIN := $(CURDIR)/bin
CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT := $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# pin is the version module $(1) has in the go.mod $(2), in a require
# block or on a require line of its own.
pin = $(shell awk '$$1 == "require" {$$1 = ""; $$0 = $$0} $$1 == "$(1)" && $$2 ~ /^v/ {print $$2}' $(2))
# promtool, built from the Prometheus module pinned in hack/promtool/go.mod.
PROMETHEUS_VERSION := $(call pin,github.com/prometheus/prometheus,hack/promtool/go.mod)
PROMTOOL := $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
# The tests' S3 object store (hack/objectstore, on the gofakes3 module
# pinned in its go.mod).
GOFAKES3_VERSION := $(call pin,github.com/rclone/gofakes3,hack/objectstore/go.mod)
OBJECTSTORE := $(LOCALBIN)/objectstore-$(GOFAKES3_VERSION)
K8S_VERSION := $(call pin,k8s.io/kubernetes,hack/controlplane/go.mod)
# Helm, pinned beside the cluster's components (the same Kubernetes
# libraries, compiled once for both).
HELM_VERSION := $(call pin,helm.sh/helm/v4,hack/controlplane/go.mod)
HELM := $(LOCALBIN)/helm-$(HELM_VERSION)
KWOK_VERSION := $(call pin,sigs.k8s.io/kwok,hack/controlplane/go.mod)
CONTROLPLANE := $(LOCALBIN)/controlplane/k8s-$(K8S_VERSION)_kwok-$(KWOK_VERSION)
# The parts of the control plane `make controlplane` builds: kubernetes
# (etcd and the Kubernetes binaries) and kwok (the fake node, which the
# clusters with real pods do not run).
CONTROLPLANE_PARTS ?= kubernetes kwok
# The control plane's kubectl, built from source with the rest of it.
KUBECTL := $(CONTROLPLANE)/kubectl
# The kubectl `make install` and `make uninstall` run: the one on PATH, or
# KUBECTL_BIN=/path/to/kubectl. Without one (KUBECTL_BIN empty), they build
# the control plane (about ten minutes the first time) and run its kubectl.
KUBECTL_BIN ?= $(shell command -v kubectl 2>/dev/null)
# The real-node profile's node components: versions pinned in
# hack/realnode/go.mod (containerd, runc, the registry) and, for the
# kubelet, kube-proxy, metrics-server and CoreDNS, hack/controlplane/go.mod.
CONTAINERD_VERSION := $(call pin,github.com/containerd/containerd/v2,hack/realnode/go.mod)
RUNC_VERSION := $(call pin,github.com/opencontainers/runc,hack/realnode/go.mod)
REGISTRY_VERSION := $(call pin,github.com/distribution/distribution/v3,hack/realnode/go.mod)
METRICS_SERVER_VERSION := $(call pin,sigs.k8s.io/metrics-server,hack/controlplane/go.mod)
COREDNS_VERSION := $(call pin,github.com/coredns/coredns,hack/controlplane/go.mod)
# OLM v1 (operator-controller and catalogd), pinned in hack/olm/go.mod, for
# the test that installs the operator from a catalog.
OLM_VERSION := $(call pin,github.com/operator-framework/operator-controller,hack/olm/go.mod)
OLM := $(LOCALBIN)/olm/operator-controller-$(OLM_VERSION)
REALNODE := $(LOCALBIN)/realnode/k8s-$(K8S_VERSION)_containerd-$(CONTAINERD_VERSION)_runc-$(RUNC_VERSION)_registry-$(REGISTRY_VERSION)_metrics-server-$(METRICS_SERVER_VERSION)_coredns-$(COREDNS_VERSION)

GO_TEST_FLAGS ?= -count=1 -timeout=55m

# Every go command here builds as the images and the cluster's components
# are built: static (CGO_ENABLED=0) and with -trimpath. Both are part of
# each compiled package's key in Go's build cache, so the tests, go vet and
# the lint reuse the packages the cluster's build compiled (the modules
# both use are at the same versions: make verify-code checks it), and a
# copy of the repository in another folder reuses them too.
export CGO_ENABLED := 0
export GOFLAGS += -trimpath

# Fail a recipe on the first failing command of a pipeline.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Demo

# The local-cluster command runs as a built binary, not through `go run`,
# which exits 1 after Ctrl-C whatever the program's own exit status: after a
# Ctrl-C that stopped everything, make exits 0.
.PHONY: demo
demo: controlplane realnode build ## Start a local cluster (pods run for real where the machine allows it), run the operator, apply every sample and show the result (Ctrl-C stops all).
	go build -o $(LOCALBIN)/localcluster ./hack/localcluster
	$(LOCALBIN)/localcluster demo --operator=$(LOCALBIN)/app-operator --nodes=$(NODES)

# How many real nodes `make demo` runs, e.g. NODES=3 (one beyond the first
# each in a network namespace of its own; see docs/real-pods.md).
NODES ?= 1

.PHONY: cluster
cluster: controlplane ## Start the full local cluster alone and print how to reach it (Ctrl-C stops it).
	go build -o $(LOCALBIN)/localcluster ./hack/localcluster
	$(LOCALBIN)/localcluster up

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs and RBAC from the markers in the code.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./internal/controller/..." output:crd:artifacts:config=config/crd/bases
	# Copies for the Helm chart, and for the manager's start-up permission check.
	rm -rf charts/app-operator/files/crds && mkdir -p charts/app-operator/files/crds
	cp config/crd/bases/*.yaml charts/app-operator/files/crds/
	cp config/rbac/role.yaml charts/app-operator/files/role.yaml
	cp config/rbac/role.yaml internal/permissions/role.yaml
	# The alerts and the etcd members' PodMonitor, for the Helm chart.
	cp config/prometheus/rules.yaml charts/app-operator/files/prometheus-rules.yaml
	cp config/prometheus/etcd-monitor.yaml charts/app-operator/files/etcd-podmonitor.yaml
	# The Grafana dashboards, for the Helm chart.
	rm -rf charts/app-operator/files/dashboards && mkdir -p charts/app-operator/files/dashboards
	cp config/grafana/*.json charts/app-operator/files/dashboards/

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods of the API types, and the apply schema of the cached types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	go run ./hack/applyschema

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

# The lint covers the main module. The modules with their own go.mod under
# hack/controlplane and hack/realnode only build the cluster's components.
.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml.
	$(GOLANGCI_LINT) run ./...

# The OLM bundle's version (the chart's appVersion), the manager image its
# ClusterServiceVersion installs, and the bundle's image, as the file-based
# catalog names it. Listing on OperatorHub needs both images pushed to a
# public registry: set BUNDLE_MANAGER_IMG and BUNDLE_IMG to them. OLM v1
# takes only a full reference (registry and repository) for the bundle: the
# default names the image a bare app-operator-bundle:v<version> is, which the
# local cluster's registry serves as Docker Hub's mirror.
BUNDLE_VERSION ?= $(shell awk '$$1 == "appVersion:" {gsub(/"/, "", $$2); print $$2}' charts/app-operator/Chart.yaml)
BUNDLE_MANAGER_IMG ?= app-operator:$(BUNDLE_VERSION)
BUNDLE_IMG ?= docker.io/library/app-operator-bundle:v$(BUNDLE_VERSION)

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/) and its file-based catalog (catalog/) from the CRDs, RBAC, Deployment and samples under config/.
	go run ./hack/bundle --version=$(BUNDLE_VERSION) --image=$(BUNDLE_MANAGER_IMG) --bundle-image=$(BUNDLE_IMG) --output=bundle --catalog=catalog/app-operator/catalog.yaml

.PHONY: verify
verify: verify-generated verify-code ## Fail when generated files (CRDs, RBAC, the OLM bundle), formatting or go.mod are stale, the lint finds something, or git tracks a binary or a file of more than 2 MB.

.PHONY: verify-generated
verify-generated: manifests generate bundle ## Fail when generated files (CRDs, RBAC, the OLM bundle) are stale or git tracks a binary or a file of more than 2 MB.
	@hack/check-tracked-files.sh
	@git diff --exit-code -- api config internal charts bundle catalog || { echo "Generated files are stale: run 'make manifests generate bundle' and commit the result."; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api config internal charts bundle catalog)" || { echo "Untracked generated files:"; git status --porcelain -- api config internal charts bundle catalog; exit 1; }

# verify-code writes no file: CI runs it beside make test.
.PHONY: verify-code
verify-code: lint ## Fail when formatting or a go.mod is stale, the operator and the cluster's components compile a module at different versions, or the lint or go vet finds something.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "Files need gofmt:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go mod tidy -diff
	cd hack/controlplane && go mod tidy -diff
	hack/samedeps.sh
	cd hack/realnode && go mod tidy -diff
	cd hack/promtool && go mod tidy -diff
	cd hack/objectstore && go mod tidy -diff && go vet ./...
	cd hack/olm && go mod tidy -diff
	go vet ./...

# hack/test.sh builds what each suite needs and starts each suite as soon
# as its tools are there: the packages that start a real node one after
# another, the real-pods suite (the longest) first; the other packages two
# at a time beside them.
.PHONY: test
test: ## Run every test: unit, admission and controller tests against a real kube-apiserver, e2e on the full local cluster, real pods on one node (installs by Helm and kustomize), the alerts' promtool tests, the dashboards' check. The tests on three nodes: make test-nodes; the install by OLM: make test-olm.
	GO_TEST_FLAGS="$(GO_TEST_FLAGS)" HELM=$(HELM) PROMTOOL=$(PROMTOOL) OBJECTSTORE=$(OBJECTSTORE) hack/test.sh

.PHONY: test-nodes
test-nodes: controlplane realnode $(OBJECTSTORE) ## Run the tests of node faults (a node lost, drained, cut off) on three real nodes.
	@summary=$$(mktemp); status=0; \
	APP_OPERATOR_NODES=3 OBJECTSTORE=$(OBJECTSTORE) APP_OPERATOR_TEST_SUMMARY=$$summary go test $(GO_TEST_FLAGS) -run '^TestNodes' ./test/realpods || status=$$?; \
	cat $$summary; rm -f $$summary; exit $$status

# OLM's build compiles a set of Kubernetes libraries of its own (older than
# the cluster's): too long for CI on a machine with empty Go caches, so
# this test runs here rather than in make test.
.PHONY: test-olm
test-olm: controlplane realnode olm ## Install, upgrade and uninstall the operator from a catalog with OLM v1, on one real node.
	go test $(GO_TEST_FLAGS) -run '^TestOLMInstallUpgradeUninstall$$' ./test/install

# The numbers of applications `make bench` measures, e.g. BENCH_N=1000,5000,10000;
# BENCH_FLAGS passes further flags (go run ./hack/bench -h lists them).
BENCH_N ?= 1000
BENCH_FLAGS ?=

.PHONY: bench
bench: controlplane ## Measure converge time against a bare client, writes, restart, update fan-out, memory and responsiveness (results under bin/bench/).
	go run ./hack/bench -n $(BENCH_N) $(BENCH_FLAGS)

# The numbers of RedisEnterpriseClusters `make bench-stateful` runs at
# once on one real node (and a fifth as many EtcdClusters), e.g.
# BENCH_STATEFUL_K=1,10; BENCH_STATEFUL_REST how long each K is measured
# at rest.
BENCH_STATEFUL_K ?= 1,10,30,50
BENCH_STATEFUL_REST ?= 1m

.PHONY: bench-stateful
bench-stateful: controlplane realnode $(OBJECTSTORE) ## Measure K Redis and K/5 etcd clusters on one operator and one real node: time to Running, cost at rest, failover of every primary frozen at once.
	mkdir -p bin/bench
	APP_OPERATOR_BENCH_STATEFUL=$(BENCH_STATEFUL_K) APP_OPERATOR_BENCH_REST=$(BENCH_STATEFUL_REST) APP_OPERATOR_MAX_PODS=250 \
	APP_OPERATOR_BENCH_OUT=$(CURDIR)/bin/bench/stateful-$$(date -u +%Y-%m-%dT%H%M%SZ).txt \
	OBJECTSTORE=$(OBJECTSTORE) go test -v -count=1 -timeout=120m -run '^TestBenchStateful$$' ./test/realpods

# The packages with fuzz targets (every package under internal/ with a
# Fuzz function in a test file); every target runs for FUZZTIME. A count
# of inputs (Nx), not a duration: with a duration, Go 1.26's fuzzing
# coordinator can report the end of the time as a failure
# ("context deadline exceeded", no failing input; golang/go#75804).
FUZZ_PACKAGES ?= $(sort $(patsubst %/,./%,$(dir $(shell grep -l '^func Fuzz' -r internal --include='*_test.go'))))
FUZZTIME ?= 5000x

.PHONY: fuzz
fuzz: ## Fuzz every builder and status function for FUZZTIME inputs each (seed corpus in each package's testdata/fuzz).
	@for pkg in $(FUZZ_PACKAGES); do \
		for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
			go test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
		done; \
	done

.PHONY: test-rules
test-rules: $(PROMTOOL) ## Check the alerts of config/prometheus/rules.yaml and run their unit tests (rules_test.yaml) with promtool.
	PROMTOOL=$(PROMTOOL) go test -count=1 -run '^TestAlertingRules' ./test/manifests

.PHONY: test-dashboards
test-dashboards: ## Check the Grafana dashboards of config/grafana: panels, data sources, every query parsed by Prometheus's PromQL parser, and metrics.txt (the metrics they name) up to date.
	cd hack/promtool && go test -count=1 ./dashboards

.PHONY: dashboard-metrics
dashboard-metrics: ## Rewrite config/grafana/metrics.txt, the metrics the dashboards name (the real-pods suite finds each in a real scrape).
	cd hack/promtool && go test -count=1 ./dashboards -update

.PHONY: test-unit
test-unit: ## Run the tests that need no cluster.
	go test $(GO_TEST_FLAGS) ./api/... ./internal/resources/... ./internal/status/...

##@ Build

# Every build of the manager uses these tags (see ManagerBuildTags in
# test/cluster/buildtags.go, which the tests' builds use).
MANAGER_BUILD_TAGS = grpcnotrace

.PHONY: build
build: ## Build the manager binary into bin/app-operator, the backup and restore commands into bin/etcd-snapshot and bin/redis-snapshot, the Redis console into bin/redis-console, and the kubectl plugin into bin/kubectl-app_operator.
	go build -tags $(MANAGER_BUILD_TAGS) -o $(LOCALBIN)/app-operator ./cmd/app-operator
	go build -o $(LOCALBIN)/etcd-snapshot ./cmd/etcd-snapshot
	go build -o $(LOCALBIN)/redis-snapshot ./cmd/redis-snapshot
	go build -o $(LOCALBIN)/redis-console ./cmd/redis-console
	go build -o $(LOCALBIN)/kubectl-app_operator ./cmd/kubectl-app_operator

IMG ?= app-operator:latest
IMAGE_ARCH ?= amd64

.PHONY: image
image: ## Build the container image (the manager, and etcd-snapshot, redis-snapshot and redis-console beside it) as an OCI archive in dist/ without a container engine (IMG, IMAGE_ARCH).
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -tags $(MANAGER_BUILD_TAGS) -trimpath -ldflags="-s -w" -o $(LOCALBIN)/linux_$(IMAGE_ARCH)/manager ./cmd/app-operator
	@# The backup Jobs and the restore init containers run etcd-snapshot and redis-snapshot from the same image.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags="-s -w" -o $(LOCALBIN)/linux_$(IMAGE_ARCH)/etcd-snapshot ./cmd/etcd-snapshot
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags="-s -w" -o $(LOCALBIN)/linux_$(IMAGE_ARCH)/redis-snapshot ./cmd/redis-snapshot
	@# Each RedisEnterpriseCluster's console Deployment runs redis-console from the same image.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags="-s -w" -o $(LOCALBIN)/linux_$(IMAGE_ARCH)/redis-console ./cmd/redis-console
	go run ./hack/image --binary=$(LOCALBIN)/linux_$(IMAGE_ARCH)/manager \
		--extra-binary=$(LOCALBIN)/linux_$(IMAGE_ARCH)/etcd-snapshot=/etcd-snapshot \
		--extra-binary=$(LOCALBIN)/linux_$(IMAGE_ARCH)/redis-snapshot=/redis-snapshot \
		--extra-binary=$(LOCALBIN)/linux_$(IMAGE_ARCH)/redis-console=/redis-console \
		--arch=$(IMAGE_ARCH) --tag=$(IMG) --output=dist/app-operator-$(IMAGE_ARCH).oci.tar

# The OLM bundle's image (bundle/, labelled with its metadata/annotations.yaml)
# and the file-based catalog's image (catalog/ at /configs), as OCI
# archives in dist/, without a container engine.
BUNDLE_LABELS = $(shell awk '$$1 ~ /^operators/ {sub(/:$$/, "", $$1); printf "--label=%s=%s ", $$1, $$2}' bundle/metadata/annotations.yaml)
CATALOG_IMG ?= docker.io/library/app-operator-catalog:v$(BUNDLE_VERSION)

.PHONY: bundle-image
bundle-image: ## Build the OLM bundle's image as an OCI archive in dist/ (BUNDLE_IMG).
	go run ./hack/image --content=bundle/manifests=/manifests --content=bundle/metadata=/metadata $(BUNDLE_LABELS) --tag=$(BUNDLE_IMG) --output=dist/app-operator-bundle.oci.tar

.PHONY: catalog-image
catalog-image: ## Build the file-based catalog's image as an OCI archive in dist/ (CATALOG_IMG).
	go run ./hack/image --content=catalog=/configs --label=operators.operatorframework.io.index.configs.v1=/configs --tag=$(CATALOG_IMG) --output=dist/app-operator-catalog.oci.tar

# The Go runtime settings (GOGC, GOMEMLIMIT) the manager's Deployment gives
# it in config/manager/manager.yaml, as NAME=value: `make run` runs the
# manager as it is deployed.
MANAGER_ENV = $(shell awk '$$1 == "-" && $$2 == "name:" && $$3 ~ /^GO/ {name = $$3; next} name != "" && $$1 == "value:" {gsub(/"/, "", $$2); printf "%s=%s ", name, $$2} {name = ""}' config/manager/manager.yaml)

.PHONY: run
# The namespace of the Lease that `make run` takes: that of an operator
# installed in the same cluster, so the two never decide at once.
RUN_LEADER_NAMESPACE ?= app-operator-system

run: build $(if $(KUBECTL_BIN),,controlplane) ## Run the operator against the cluster of the current kubeconfig, with the Deployment's Go runtime settings, as a leader-elected replica beside any installed one.
	$(or $(KUBECTL_BIN),$(KUBECTL)) get namespace $(RUN_LEADER_NAMESPACE) >/dev/null 2>&1 || $(or $(KUBECTL_BIN),$(KUBECTL)) create namespace $(RUN_LEADER_NAMESPACE)
	env $(MANAGER_ENV) $(LOCALBIN)/app-operator --health-probe-bind-address=:8081 --leader-elect --leader-election-namespace=$(RUN_LEADER_NAMESPACE)

.PHONY: install
install: $(if $(KUBECTL_BIN),,controlplane) ## Install the CRDs into the cluster of the current kubeconfig, with the kubectl on PATH (without one, the control plane's, built from source).
	$(or $(KUBECTL_BIN),$(KUBECTL)) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: $(if $(KUBECTL_BIN),,controlplane) ## Remove the CRDs (and every custom resource) from the cluster of the current kubeconfig, with the kubectl on PATH (without one, the control plane's).
	$(or $(KUBECTL_BIN),$(KUBECTL)) delete --ignore-not-found -k config/crd

##@ Tools

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from source (cached; CONTROLPLANE_PARTS=kubernetes leaves kwok out).
	@hack/controlplane/build.sh $(CONTROLPLANE) $(CONTROLPLANE_PARTS)

.PHONY: realnode
realnode: controlplane ## Build the real-node profile's kubelet, kube-proxy, containerd, runc, registry, metrics-server, CoreDNS and images, etcd's next minor from the control plane's (cached; root only).
	@hack/realnode/build.sh $(REALNODE) $(CONTROLPLANE)

.PHONY: olm
olm: ## Build OLM v1 (operator-controller and catalogd) from source (cached), for the install from a catalog.
	@hack/olm/build.sh $(OLM)

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	hack/retry.sh env GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	hack/retry.sh env GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool (the Prometheus module pinned in hack/promtool/go.mod) into bin/.
$(PROMTOOL):
	@mkdir -p $(LOCALBIN)
	@# Without the service discoveries (remove_all_sd): the rule checks and
	@# tests need none, and they are most of the build.
	cd hack/promtool && go build -tags remove_all_sd -o $@ github.com/prometheus/prometheus/cmd/promtool

.PHONY: objectstore
objectstore: $(OBJECTSTORE) ## Build the tests' S3 object store (hack/objectstore) into bin/.
$(OBJECTSTORE): $(wildcard hack/objectstore/*.go) hack/objectstore/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/objectstore && go build -o $@ .

.PHONY: helm
helm: $(HELM) ## Build Helm (pinned in hack/controlplane/go.mod) into bin/.
$(HELM):
	@mkdir -p $(LOCALBIN)
	cd hack/controlplane && go build -o $@.tmp \
		-ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION) -X helm.sh/helm/v4/internal/version.metadata=" \
		helm.sh/helm/v4/cmd/helm
	mv $@.tmp $@
