# machineapi: the Kubernetes Machine API. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
# Released modules, in dependency order (each may import only those before it).
MODULES := drain nodelink machine-api cluster-api providers/libvirt release
# Modules holding API types and controllers: controller-gen runs in these.
GEN_MODULES := machine-api cluster-api
# Dev-only modules: built and tested with GOWORK=off, never released.
DEV_MODULES := hack/tools hack/bench hack/lint hack/prometheus hack/nodeimage
# Modules make lint runs golangci-lint in (one config for all: .golangci.yml).
LINT_MODULES := $(MODULES) $(DEV_MODULES) hack/faults hack/vms

K8S_VERSION := $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" { sub(/^v/, "", $$3); print $$3 }' hack/controlplane/go.mod)
KUBEBUILDER_ASSETS := $(ROOT)/bin/k8s/$(K8S_VERSION)
export KUBEBUILDER_ASSETS
# Prometheus and promtool, built from the module hack/prometheus pins (make prometheus).
PROMETHEUS_BIN_DIR := $(ROOT)/bin/prometheus/$(shell hack/prometheus/version.sh)
export PROMETHEUS_BIN_DIR

# Tools pinned by hack/tools/go.mod's tool directives; `go tool -n` builds once and prints the path.
tool = $(shell cd $(ROOT)/hack/tools && GOWORK=off go tool -n $(1))
# golangci-lint with kube-api-linter compiled in, pinned in its own module (see hack/lint/go.mod).
GOLANGCI_LINT = cd $(ROOT)/hack/lint && GOWORK=off go tool -n golangci-lint-kube-api-linter
GO_TEST_FLAGS ?= -timeout 30m

APISERVER_PORT ?= 16443
ETCD_PORT ?= 12379

##@ Getting started

.PHONY: help
help: ## List every target with what it does.
	@awk 'BEGIN { FS = ":.*## " } /^##@/ { printf "\n%s\n", substr($$0, 5) } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

# What make run applies once the managers run; `make run SAMPLES=` applies nothing.
SAMPLES ?= docs/examples/cluster.yaml docs/examples/healthcheck.yaml

.PHONY: run
run: controlplane build-localstack build ## Run the whole stack on a local control plane (state in .local/, Ctrl-C stops it).
	@$(ROOT)/bin/tools/localstack --bin-dir $(KUBEBUILDER_ASSETS) --state-dir $(ROOT)/.local \
		--apiserver-port $(APISERVER_PORT) --etcd-port $(ETCD_PORT) \
		$(foreach m,$(GEN_MODULES),--crds $(m)/config/crd/bases) --crds machine-api/config/admission \
		--component "machine-manager=$(ROOT)/bin/machine-manager --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 --sim-state-dir=$(ROOT)/.local/sim --sim-boot-delay=3s --sim-leave-condition-taints --node-link-selector=!cluster.machineapi.dev/remote-nodes" \
		--component "cluster-manager=$(ROOT)/bin/cluster-manager --metrics-bind-address=127.0.0.1:18082 --health-probe-bind-address=127.0.0.1:18083" \
		$(foreach s,$(SAMPLES),--apply $(s)) $(if $(SAMPLES),--hints docs/examples/run-hints.txt)

# make run-vms: the loopback MachineClass of the libvirt provider's samples, with the image
# volume import-node-image.sh names, and its MachineDeployment of two VMs.
.PHONY: run-vms
run-vms: controlplane build-localstack ## Like make run, with 2 real VMs: libvirt set up and libvirtd started if needed, the node image built and imported, the libvirt manager and a MachineDeployment of 2 VMs (needs root; state in .local/vms/; Ctrl-C deletes the VMs, then stops).
	@vol=$$(hack/vms/prepare.sh run-vms); mkdir -p $(ROOT)/.local/vms; \
		sed "s/machineapi-node-0123456789ab\.raw/$$vol/" providers/libvirt/config/samples/machineclass-loopback.yaml > $(ROOT)/.local/vms/machineclass.yaml; \
		$(ROOT)/bin/tools/localstack --make-target run-vms --bin-dir $(KUBEBUILDER_ASSETS) --state-dir $(ROOT)/.local/vms \
		--apiserver-port $(APISERVER_PORT) --etcd-port $(ETCD_PORT) --node-bootstrap --delete-applied-on-exit \
		--crds machine-api/config/crd/bases --crds machine-api/config/admission \
		--component "machine-manager-libvirt=$(ROOT)/bin/machine-manager-libvirt --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 --libvirt-manager-id=run-vms" \
		--apply $(ROOT)/.local/vms/machineclass.yaml --apply providers/libvirt/config/samples/machinedeployment.yaml

.PHONY: build
build: ## Build the binaries into bin/: machine-manager, kubectl-machine, nodelink, cluster-manager.
	@cd machine-api && go build -o $(ROOT)/bin/ ./cmd/machine-manager ./cmd/kubectl-machine
	@cd nodelink && go build -o $(ROOT)/bin/ ./cmd/nodelink
	@cd cluster-api && go build -o $(ROOT)/bin/ ./cmd/cluster-manager

# Each module's tests run once with go.work; with GOWORK=off they are only compiled and linked
# (-run '^$'), which is what that pass is for: a module whose go.mod lacks a requirement or a
# replace that the workspace supplies fails to build on its own (make verify also vets each module
# with GOWORK=off).
.PHONY: test
test: controlplane prometheus ## Run every module's tests with go.work against the source-built control plane, and build them with GOWORK=off (hack/prometheus: promtool checks and unit-tests the alert rules).
	@for m in $(MODULES); do \
		echo "== test $$m (go.work)"; (cd $$m && go test $(GO_TEST_FLAGS) ./...); \
		echo "== build tests $$m (GOWORK=off)"; (cd $$m && GOWORK=off go test -count=1 -run '^$$' ./... > /dev/null) \
			|| { echo "$$m does not build without go.work: add the missing requirement or replace to $$m/go.mod"; exit 1; }; \
	done
	@for m in $(DEV_MODULES); do echo "== test $$m"; (cd $$m && GOWORK=off go test $(GO_TEST_FLAGS) ./...); done

# make test-faults and test-autoscaler: FAULTS_FOCUS runs the scenarios whose names match (a
# regexp), FAULTS_ARGS passes suite flags (-keep-state, -known-bugs).
FAULTS_FOCUS ?=
FAULTS_ARGS ?=

.PHONY: test-faults
test-faults: controlplane build prometheus ## Fault matrix (docs/reliability.md): the real managers under API server restarts, crashes, provider errors, Node faults and bad input; a real Prometheus sees the drain alert fire.
	@cd hack/faults && GOWORK=off go test -timeout 50m -count=1 -v . -args -ginkgo.vv -ginkgo.label-filter='!autoscaler' \
		$(if $(FAULTS_FOCUS),-ginkgo.focus='$(FAULTS_FOCUS)') \
		-root=$(ROOT) -bin-dir=$(ROOT)/bin -k8s-bin-dir=$(KUBEBUILDER_ASSETS) -prometheus-bin-dir=$(PROMETHEUS_BIN_DIR) $(FAULTS_ARGS)

.PHONY: test-observability
test-observability: controlplane build prometheus ## Only the fault matrix's observability scenario: a real Prometheus scrapes both managers and sees MachineDrainBlocked fire and resolve (make test-faults runs it too).
	@cd hack/faults && GOWORK=off go test -timeout 15m -count=1 -v . -args -ginkgo.vv -ginkgo.label-filter=observability \
		-root=$(ROOT) -bin-dir=$(ROOT)/bin -k8s-bin-dir=$(KUBEBUILDER_ASSETS) -prometheus-bin-dir=$(PROMETHEUS_BIN_DIR) $(FAULTS_ARGS)

# make test-autoscaler runs CLUSTER_AUTOSCALER when set; else the provided build
# (CLUSTER_AUTOSCALER_XZ, unpacked into bin/cluster-autoscaler when missing or changed).
CLUSTER_AUTOSCALER ?=
CLUSTER_AUTOSCALER_XZ ?= $(ROOT)/../shared/tools/cluster-autoscaler/cluster-autoscaler-1.36.1-clusterapi-linux-amd64.xz

.PHONY: test-autoscaler
test-autoscaler: controlplane build ## The real cluster-autoscaler (1.36, clusterapi) on the local stack: scale up, down, mid-rollout, paused, from zero (CLUSTER_AUTOSCALER=<path>: another build).
	@ca=$$(hack/cluster-autoscaler.sh '$(CLUSTER_AUTOSCALER)' '$(CLUSTER_AUTOSCALER_XZ)'); ca=$$(realpath "$$ca"); \
		echo "== cluster-autoscaler $$ca"; \
		cd hack/faults && GOWORK=off go test -timeout 30m -count=1 -v . -args -ginkgo.vv -ginkgo.label-filter=autoscaler \
		$(if $(FAULTS_FOCUS),-ginkgo.focus='$(FAULTS_FOCUS)') \
		-root=$(ROOT) -bin-dir=$(ROOT)/bin -k8s-bin-dir=$(KUBEBUILDER_ASSETS) -cluster-autoscaler="$$ca" $(FAULTS_ARGS)

# make test-vms: VMS_FOCUS runs the specs whose names match (a regexp), VMS_ARGS passes suite
# flags (-keep-state). Ginkgo's own timeout comes first, so that the specs' clean-up (the VMs)
# still runs when it strikes.
VMS_FOCUS ?=
VMS_ARGS ?=

.PHONY: test-vms
test-vms: controlplane ## The libvirt provider end to end on real VMs (at most 2): Nodes joining with their Machine's labels before any pod, drain under a PodDisruptionBudget, health-check replacement of a destroyed VM, an in-place resize, scale to 0, bad input (needs root: sets up libvirt, builds the node image).
	@vol=$$(hack/vms/prepare.sh test-vms); \
		cd hack/vms && GOWORK=off go test -timeout 45m -count=1 -v . -args -ginkgo.v -ginkgo.timeout=35m -ginkgo.grace-period=3m \
		$(if $(VMS_FOCUS),-ginkgo.focus='$(VMS_FOCUS)') \
		-root=$(ROOT) -k8s-bin-dir=$(KUBEBUILDER_ASSETS) -manager=$(ROOT)/bin/machine-manager-libvirt -image-volume="$$vol" $(VMS_ARGS)

##@ Development

# Apply configurations are generated for the API packages that enable them (the
# +kubebuilder:ac:generate marker in their doc.go), into <module>/applyconfiguration as their
# +kubebuilder:ac:output:package marker says; the folder is regenerated from scratch.
.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs, RBAC and server-side apply configurations with controller-gen.
	@cg=$(call tool,controller-gen); for m in $(GEN_MODULES); do \
		if [ -d $$m/api ]; then \
			echo "== generate $$m"; \
			(cd $$m && GOWORK=off $$cg object:headerFile=$(ROOT)/hack/boilerplate.go.txt paths=./api/... \
				crd output:crd:artifacts:config=config/crd/bases paths=./api/... \
				rbac:roleName=$$m-manager output:rbac:artifacts:config=config/rbac paths=./...); \
		fi; \
		if grep -qs '+kubebuilder:ac:generate=true' $$m/api/*/doc.go; then \
			echo "== generate $$m apply configurations ($$m/applyconfiguration)"; \
			rm -rf $$m/applyconfiguration; \
			(cd $$m && GOWORK=off $$cg applyconfiguration:headerFile=$(ROOT)/hack/boilerplate.go.txt paths=./api/...); \
		fi; \
	done
	@echo "== generate nodelink (RBAC of the standalone binary)"
	@cd nodelink && GOWORK=off $(call tool,controller-gen) rbac:roleName=nodelink output:rbac:artifacts:config=config/rbac paths=./cmd/...
	@for m in machine-api:machine-manager cluster-api:cluster-manager; do d=$${m%%:*}/config/prometheus; \
		echo "== generate $$d/prometheusrule.yaml"; hack/prometheus/prometheusrule.sh $$d/alerts.yaml $${m##*:} > $$d/prometheusrule.yaml; \
	done

.PHONY: docs
docs: ## Generate the API reference (docs/reference/<module>.md) from the API types with crd-ref-docs.
	@mkdir -p docs/reference
	@crd=$(call tool,crd-ref-docs); for m in $(GEN_MODULES); do \
		(cd $$m && GOWORK=off $$crd --source-path=./api/v1beta1 --config=$(ROOT)/hack/docs/crd-ref-docs.yaml \
			--renderer=markdown --output-path=$(ROOT)/docs/reference/$$m.md --log-level=ERROR); \
	done

.PHONY: lint
lint: ## Run golangci-lint, and kube-api-linter on */api/, in every module with the config at the root (.golangci.yml).
	@gl=$$($(GOLANGCI_LINT)); failed=""; for m in $(LINT_MODULES); do echo "== lint $$m"; \
		(cd $$m && GOWORK=off $$gl run --config $(ROOT)/.golangci.yml ./...) || failed="$$failed $$m"; \
	done; [ -z "$$failed" ] || { echo "lint findings in:$$failed"; exit 1; }

.PHONY: verify
verify: generate docs ## Fail on stale generated files, gofmt, go vet, lint findings, untidy go.mod files or imports that break the dependency direction.
	@echo "== generated files (deepcopy, CRDs, RBAC, apply configurations, API reference) are up to date"
	@changed=$$(git status --porcelain -- $(foreach m,$(GEN_MODULES),':(glob)$(m)/**/zz_generated.*.go' $(m)/config $(m)/applyconfiguration) nodelink/config docs/reference); \
		[ -z "$$changed" ] || { echo "$$changed"; echo "generated files differ from the commit: run 'make generate docs' and commit the result"; exit 1; }
	@echo "== gofmt"
	@out=$$(gofmt -l $(MODULES) hack); [ -z "$$out" ] || { echo "not gofmt'ed (run gofmt -w):"; echo "$$out"; exit 1; }
	@for m in $(MODULES); do echo "== vet + tidy $$m"; \
		(cd $$m && GOWORK=off go vet ./... && GOWORK=off go mod tidy -diff) \
			|| { echo "$$m: fix the vet findings, or run 'cd $$m && GOWORK=off go mod tidy'"; exit 1; }; \
	done
	@for m in $(DEV_MODULES) machine-api/examples/provider hack/goreleaser hack/controlplane hack/controlplane/etcd; do echo "== tidy $$m"; (cd $$m && GOWORK=off go mod tidy -diff); done
	@for m in hack/faults hack/vms; do echo "== vet + tidy $$m"; (cd $$m && GOWORK=off go vet ./... && GOWORK=off go mod tidy -diff); done
	@$(MAKE) --no-print-directory lint
	@echo "== dependency direction"
	@cd hack/tools && GOWORK=off go run ./cmd/importcheck $(ROOT)

.PHONY: bench
bench: controlplane ## Scale benchmark on a fresh control plane: 1000 machines (BENCH_FULL=1: 5000, then 3 rounds of 0->1000 against 0->5000); writes dist/bench.json.
	@mkdir -p dist
	@cd machine-api && go build -o $(ROOT)/bin/machine-manager ./cmd/machine-manager
	@cd nodelink && go build -o $(ROOT)/bin/nodelink ./cmd/nodelink
	@cd hack/bench && GOWORK=off go run . -bin-dir $(KUBEBUILDER_ASSETS) -machine-manager $(ROOT)/bin/machine-manager \
		-nodelink $(ROOT)/bin/nodelink -root $(ROOT) -out $(ROOT)/dist/bench.json $(BENCH_ARGS)

# make bench-ab: A is machine-manager built from BENCH_BASE (a git revision, default HEAD~1), B
# the working tree's; BENCH_ROUNDS rounds of the 0 -> 1000 scale-up with each, alternating.
BENCH_BASE ?= HEAD~1
BENCH_ROUNDS ?= 3
.PHONY: bench-ab
bench-ab: controlplane ## A/B scale-up: machine-manager from BENCH_BASE (A) against the working tree (B), BENCH_ROUNDS rounds alternating, each on a fresh control plane; writes dist/bench-ab.json.
	@mkdir -p dist
	@rm -rf $(ROOT)/dist/bench-base && git worktree add --detach $(ROOT)/dist/bench-base $(BENCH_BASE) > /dev/null
	@cd $(ROOT)/dist/bench-base/machine-api && go build -o $(ROOT)/bin/machine-manager-base ./cmd/machine-manager; status=$$?; \
		cd $(ROOT) && git worktree remove --force $(ROOT)/dist/bench-base; exit $$status
	@cd machine-api && go build -o $(ROOT)/bin/machine-manager ./cmd/machine-manager
	@cd nodelink && go build -o $(ROOT)/bin/nodelink ./cmd/nodelink
	@cd hack/bench && GOWORK=off go run . -bin-dir $(KUBEBUILDER_ASSETS) -machine-manager $(ROOT)/bin/machine-manager-base \
		-ab-manager $(ROOT)/bin/machine-manager -ab-rounds $(BENCH_ROUNDS) -nodelink $(ROOT)/bin/nodelink -root $(ROOT) \
		-out $(ROOT)/dist/bench-ab.json $(BENCH_ARGS)

.PHONY: manifests
manifests: controlplane ## Render each module's installation (config/default) into dist/manifests/<module>-components.yaml, and its monitoring (config/prometheus) into <module>-monitoring.yaml.
	@mkdir -p dist/manifests
	@for m in machine-api nodelink cluster-api; do \
		if [ -f $$m/config/default/kustomization.yaml ]; then \
			$(KUBEBUILDER_ASSETS)/kubectl kustomize $$m/config/default > dist/manifests/$$m-components.yaml; \
			echo "dist/manifests/$$m-components.yaml"; \
		fi; \
		if [ -f $$m/config/prometheus/kustomization.yaml ]; then \
			$(KUBEBUILDER_ASSETS)/kubectl kustomize $$m/config/prometheus > dist/manifests/$$m-monitoring.yaml; \
			echo "dist/manifests/$$m-monitoring.yaml (PrometheusRule and ServiceMonitor: needs the Prometheus Operator)"; \
		fi; \
	done

.PHONY: tidy
tidy: ## Run go mod tidy in every module.
	@for m in $(MODULES) $(DEV_MODULES) hack/faults hack/vms; do (cd $$m && GOWORK=off go mod tidy); done

.PHONY: controlplane
controlplane: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd from source into bin/k8s/ (only when missing or re-pinned).
	@hack/controlplane/build.sh

.PHONY: prometheus
prometheus: ## Build prometheus and promtool from the module hack/prometheus pins into bin/prometheus/ (only when missing or re-pinned).
	@hack/prometheus/build.sh > /dev/null

.PHONY: node-image
node-image: ## Build the libvirt provider's node disk image (Debian, containerd, kubelet from the pins; needs root) into ~/.cache/machineapi/node-image/ (only when missing or re-pinned); prints its folder.
	@hack/nodeimage/build.sh

.PHONY: node-image-smoke
node-image-smoke: ## Build the node image if needed, boot it once under QEMU (TCG, user networking on loopback only) and check on its console that the seed, containerd, the images and the kubelet came up.
	@hack/nodeimage/smoke.sh

.PHONY: build-localstack
build-localstack:
	@cd hack/tools && GOWORK=off go build -o $(ROOT)/bin/tools/localstack ./cmd/localstack

include hack/release.mk

.PHONY: clean
clean: ## Remove make run's state (.local/): etcd data, certificates, logs, kubeconfig.
	rm -rf .local
