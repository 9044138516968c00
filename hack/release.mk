# Release targets: the Makefile includes this file. docs/releasing.md walks through a release.
# The release tool is the release module's command, run with GOWORK=off; GoReleaser is pinned by
# the dev-only module hack/goreleaser (its large dependency graph stays out of every other module)
# and built once into the build cache by `go tool -n` (the first run takes minutes).

##@ Releasing

RELEASE_TOOL = cd $(ROOT)/release && GOWORK=off go run ./cmd/release --root $(ROOT)
GORELEASER = $(shell cd $(ROOT)/hack/goreleaser && GOWORK=off go tool -n goreleaser)
# Flags for go test in release-check and release-tag, for example TEST_FLAGS=-short.
TEST_FLAGS ?=
# Modules with binaries, so with a GoReleaser configuration in release/goreleaser/.
RELEASE_BINARY_MODULES := nodelink machine-api cluster-api

# $(call release-need,VAR,example) stops make with a usage line when VAR is empty.
release-need = $(if $($(1)),,$(error $(1) is required, for example: make $@ $(1)=$(2)))

.PHONY: release-plan
release-plan: ## Per module: last tag, commits and API changes since, next version, release order and require bumps.
	@$(RELEASE_TOOL) plan

.PHONY: release-changelog
release-changelog: ## Print MODULE's changelog since its last tag (VERSION= titles it).
	@$(call release-need,MODULE,machine-api)$(RELEASE_TOOL) changelog $(MODULE) $(if $(VERSION),--version $(VERSION))

.PHONY: release-check
release-check: ## Check that MODULE can be released as VERSION (clean tree, tagged requires, tidy/vet/test, consumer build).
	@$(call release-need,MODULE,machine-api)$(call release-need,VERSION,v0.2.0)$(RELEASE_TOOL) check $(MODULE) $(VERSION) --test-flags="$(TEST_FLAGS)"

.PHONY: release-tag
release-tag: ## Run release-check, then create the annotated tag MODULE/VERSION on HEAD (never pushes).
	@$(call release-need,MODULE,machine-api)$(call release-need,VERSION,v0.2.0)$(RELEASE_TOOL) tag $(MODULE) $(VERSION) --test-flags="$(TEST_FLAGS)"

.PHONY: release-snapshot
release-snapshot: ## Snapshot of MODULE in dist/MODULE/: GoReleaser binaries (linux amd64+arm64), OCI image, changelog.
	@$(call release-need,MODULE,machine-api)$(RELEASE_TOOL) build $(MODULE) --snapshot --goreleaser $(GORELEASER) $(if $(VERSION),--version $(VERSION))

.PHONY: release-build
release-build: ## Release artifacts of MODULE at VERSION into dist/MODULE/; HEAD must be the tag MODULE/VERSION.
	@$(call release-need,MODULE,machine-api)$(call release-need,VERSION,v0.2.0)$(RELEASE_TOOL) build $(MODULE) --version $(VERSION) --goreleaser $(GORELEASER)

.PHONY: release-image
release-image: ## Rebuild MODULE's OCI image (layout + docker-load tarballs) from dist/MODULE/ binaries stamped VERSION.
	@$(call release-need,MODULE,machine-api)$(call release-need,VERSION,v0.2.0)$(RELEASE_TOOL) image $(MODULE) --version $(VERSION)

.PHONY: release-validate
release-validate: ## Validate the root .goreleaser.yaml and every module's release/goreleaser/*.yaml.
	@g=$(GORELEASER); for c in .goreleaser.yaml $(foreach m,$(RELEASE_BINARY_MODULES),release/goreleaser/$(m).yaml); do \
		echo "== goreleaser check $$c"; RELEASE_VERSION=v0.0.0 $$g check --quiet --config $$c; done

.PHONY: release-build-all
release-build-all: ## Cross-compile every module's binaries at once with the root .goreleaser.yaml (snapshot, dist/all/).
	@skip=""; for b in $$(awk '$$1 == "binary:" { print $$2 }' .goreleaser.yaml); do \
			ls $(ROOT)/*/cmd/$$b/*.go >/dev/null 2>&1 || { echo "skipping $$b: no cmd/$$b yet"; skip="$$skip SKIP_$$(echo $$b | tr a-z- A-Z_)=true"; }; \
		done; \
		env $$skip $(GORELEASER) build --snapshot --clean --config .goreleaser.yaml
