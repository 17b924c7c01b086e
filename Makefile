# kargo-fleet. `make demo` shows a fleet promotion on a local control plane;
# `make test` runs every test (unit, fuzz seed corpora, envtest integration)
# and checks that generated files are up to date.

SHELL := /usr/bin/env bash
export GOTOOLCHAIN := local

GO            ?= go
CONTROLLER_GEN = $(GO) tool controller-gen
GOLANGCI_LINT  = $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
K8S_VERSION   ?= v1.37.1
FUZZTIME      ?= 30s
KUBEBUILDER_ASSETS ?= $(CURDIR)/bin/k8s/$(K8S_VERSION)
export KUBEBUILDER_ASSETS
KARGO_CRDS    ?= $(abspath $(CURDIR)/../shared/kargo/v1.11.2/crds)
export KARGO_CRDS
TEST_TIMEOUT  ?= 30m

.PHONY: all
all: build

##@ Build

# The release version: the chart's appVersion, so the chart's default image
# tag is the image `make image` builds.
VERSION       ?= v$(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/kargo-fleet/Chart.yaml)
REVISION      ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: build
build: ## Build bin/kargo-fleet, stamped with the chart's appVersion and the commit.
	$(GO) build -ldflags "-X github.com/kargo-fleet/kargo-fleet/internal/version.Version=$(VERSION)$(if $(REVISION),+$(shell echo $(REVISION) | cut -c1-12))" \
	  -o bin/kargo-fleet ./cmd/kargo-fleet
SOURCE_EPOCH  ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64

# Where the image and the chart are published; the image's cosign
# signatures name IMAGE_REPOSITORY. SIGNING_KEY (environment) is the PEM EC
# P-256 key that signs `make image` and `make dist`; without it each run
# signs with an ephemeral key (docs/releasing.md).
IMAGE_REPOSITORY ?= ghcr.io/kargo-fleet/kargo-fleet
CHART_REPOSITORY ?= ghcr.io/kargo-fleet/charts/kargo-fleet

.PHONY: image
image: ## Build the signed container image (static binary, non-root, no shell) as an OCI layout in bin/image; SBOMs, chart and provenance in bin/image-release.
	$(GO) run ./hack/image -out bin/image -release-out bin/image-release -version $(VERSION) -revision "$(REVISION)" \
	  -created $(SOURCE_EPOCH) -platforms $(IMAGE_PLATFORMS) -repository $(IMAGE_REPOSITORY) -chart-repository $(CHART_REPOSITORY)

.PHONY: dist
dist: ## Build the CLI for linux and darwin (amd64, arm64) into bin/dist: archives, SBOMs, checksums, krew manifest, signatures, provenance.
	$(GO) run ./hack/dist -out bin/dist -version $(VERSION) -revision "$(REVISION)" -mtime $(SOURCE_EPOCH)

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./internal/kargo/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=charts/kargo-fleet/files/crds
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./internal/kargo/... output:crd:artifacts:config=internal/kargo/crds
	$(CONTROLLER_GEN) rbac:roleName=kargo-fleet-controller paths=./fleetstage/... paths=./steps/... paths=./internal/stepserver/... paths=./internal/steptoken/... paths=./internal/kargoclient/... paths=./internal/manager/... paths=./internal/inventory/... output:rbac:artifacts:config=charts/kargo-fleet/files/rbac

.PHONY: verify
verify: generate ## Fail when generated files are stale, a tracked file is over 1 MiB, the pure package list and its lint rule disagree, a label key is declared outside api/v1alpha1/labels.go, or a function is too complex.
	@hack/check-file-sizes.sh
	$(GO) run ./hack/purecheck
	$(GO) run ./hack/keycheck
	@# Cyclomatic complexity 20 at most in every non-test function, as the
	@# linter's gocyclo rule says (.golangci.yml), without the linter.
	@out=$$($(GO) tool gocyclo -over 20 -ignore '_test\.go$$|zz_generated' api cmd fleetstage hack internal steps test); \
	  if [ -n "$$out" ]; then echo "$$out"; echo "functions over cyclomatic complexity 20: split them"; exit 1; fi
	@if [ -n "$$(git status --porcelain -- charts/kargo-fleet/files internal/kargo/crds '*zz_generated*')" ]; then \
	  git status --porcelain -- charts/kargo-fleet/files internal/kargo/crds '*zz_generated*'; \
	  echo "generated files are stale: run 'make generate' and commit the result"; exit 1; fi

.PHONY: control-plane
control-plane: $(KUBEBUILDER_ASSETS)/.stamp ## kube-apiserver and etcd for envtest: prebuilt (setup-envtest) when reachable, else built from the Go module proxy.
$(KUBEBUILDER_ASSETS)/.stamp:
	K8S_VERSION=$(K8S_VERSION) hack/build-control-plane.sh $(KUBEBUILDER_ASSETS) >/dev/null

##@ Demo

DEMO_FLAGS ?=

.PHONY: demo
demo: control-plane ## A 200-target fleet on a local control plane with the Kargo simulator: promote, halt, roll back, an error-rate gate.
	@# The error-rate chapter needs Prometheus: installed as .ci/run does when
	@# root with apt-get; otherwise the demo skips that chapter and says why.
	@if ! command -v prometheus >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make demo: installing prometheus (apt-get) for the error-rate chapter"; \
		apt-get update -qq && apt-get install -y -qq prometheus >/dev/null || true; \
	fi
	$(GO) build -o bin/kargo-fleet-demo ./cmd/kargo-fleet-demo
	bin/kargo-fleet-demo $(DEMO_FLAGS)

##@ Test

.PHONY: test
test: verify test-unit test-integration ## Run every test: what CI runs.

.PHONY: test-unit
test-unit: ## Unit tests of every package, with the race detector, and fuzz seed corpora.
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /test/ -e /hack/)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 30s) each, one after another.
	@for pkg in $$($(GO) list ./... | grep -v /test/); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -c6-); do \
	    echo "== $$fn ($$pkg)"; \
	    $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

.PHONY: test-integration
test-integration: control-plane ## envtest tests against a real kube-apiserver and etcd.
	@mkdir -p bin
	@set -o pipefail; $(GO) test -count=1 -p 1 -tags integration -timeout $(TEST_TIMEOUT) ./test/... -v > bin/test-integration.log 2>&1; rc=$$?; \
	  grep -E '^(envtest:|report:|--- |PASS|FAIL|ok|panic)' bin/test-integration.log; \
	  if [ $$rc -ne 0 ]; then echo "--- failures (full log: bin/test-integration.log)"; grep -B5 -A40 -E -- '--- FAIL|^panic' bin/test-integration.log | tail -300; fi; \
	  exit $$rc

E2E_ARGS ?=

.PHONY: e2e
e2e: ## End-to-end suite against a cluster running Kargo and kargo-fleet (E2E_KUBECONFIG, E2E_TARGET_URL, ...; docs/e2e.md). Not part of make test.
	$(GO) test -count=1 -tags e2e -timeout 60m -v ./test/e2e/ $(E2E_ARGS)

.PHONY: e2e-local
e2e-local: control-plane ## The end-to-end suite against a local control plane with the Kargo simulator and kargo-fleet.
	$(GO) run ./hack/e2e-local -args "$(E2E_ARGS)"

LANE_DIR      ?= /tmp/kargo-fleet-argocd-lane
E2E_ARGOCD_ARGS ?=

.PHONY: e2e-argocd
e2e-argocd: ## The real Argo CD lane's suite: Kargo, Argo CD, 4 destination clusters and kargo-fleet as processes (hack/argocd-lane/up.sh first; docs/e2e.md).
	@[ -f $(LANE_DIR)/lane.env ] && curl -sf "$$(sed -n 's/^export E2E_ARGOCD_KARGO_API=//p' $(LANE_DIR)/lane.env)/healthz" >/dev/null && \
	  KUBECONFIG=$(LANE_DIR)/kc/hub-admin.kubeconfig kubectl get --raw /readyz >/dev/null 2>&1 || \
	  { echo "the Argo CD lane is not up in $(LANE_DIR): run hack/argocd-lane/up.sh (docs/e2e.md, \"The real Argo CD lane\")"; exit 2; }
	source $(LANE_DIR)/lane.env && $(GO) test -count=1 -tags e2eargocd -timeout 60m -v ./test/e2eargocd/ $(E2E_ARGOCD_ARGS)

BENCHTIME     ?= 200ms

.PHONY: bench
bench: ## Every benchmark of the tree (each package holding a Benchmark function), BENCHTIME (default 200ms) each.
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) \
	  $$(for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
	    grep -qs '^func Benchmark' $$dir/*_test.go && echo $$dir; done)

SCALE_TARGETS ?= 10000

.PHONY: scale
# The targets spread over three simulated Kargo shards, as a fleet of that
# size would be run; SCALE_FLAGS= puts every target on the default controller.
SCALE_FLAGS ?= -shards 3

scale: control-plane ## Scale run on a local control plane: a rollout, a breach and its rollback at 10,000 targets over three Kargo shards (SCALE_TARGETS, SCALE_FLAGS); report in bin/scale-report.md.
	$(GO) run ./hack/scale -targets $(SCALE_TARGETS) $(SCALE_FLAGS)

.PHONY: helm-lint
helm-lint: ## Render the chart for every tested variant and lint it strictly (Helm SDK).
	$(GO) test -count=1 ./internal/helmchart/

.PHONY: lint
lint: ## go vet and golangci-lint.
	$(GO) vet ./...
	$(GO) vet -tags integration ./test/...
	$(GOLANGCI_LINT) run ./...

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "%-18s %s\n", $$1, $$2}'
