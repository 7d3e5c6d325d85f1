GO       ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
BRANCH   ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
BUILD_USER ?= $(shell id -un 2>/dev/null)@$(shell hostname 2>/dev/null)
# Once per make run, so every binary of a release says the same.
ifndef BUILD_DATE
BUILD_DATE := $(shell date -u +%Y%m%d-%H:%M:%S)
endif
VERSION_PKG := github.com/prometheus/common/version
# LDFLAGS fill what --version and schedstatd_build_info show.
LDFLAGS  := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) \
	-X $(VERSION_PKG).Branch=$(BRANCH) -X $(VERSION_PKG).BuildUser=$(BUILD_USER) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)
# BIN is where build writes the daemon.
BIN      ?= schedstatd
PKGS     ?= ./...
BENCHOUT ?= bench.txt

.PHONY: all build image release test-chart run test test-host test-deps test-kernels kernel-deps test-kubelet test-known-gaps test-short vet staticcheck lint fmt-check fuzz fuzz-smoke soak bench bench-smoke bench-daemon update-golden tidy-check clean

all: build

# build writes the daemon as the release and the image have it: static
# (CGO_ENABLED=0) and -trimpath, so make run and make bench-daemon run the
# binary users run (a cgo build links libc, which the image has not).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/schedstatd

# image writes the container image as an OCI archive, IMAGE_TAR, without
# a container engine or registry (internal/imagebuild): the static daemon
# (CGO_ENABLED=0, -trimpath, LDFLAGS) alone on an empty base, tagged
# $(IMAGE_REPO):$(VERSION). Load it with `ctr -n k8s.io images import`,
# `podman load -i`, `skopeo copy oci-archive:...` or `docker load -i`
# (Docker 25+). deploy/Dockerfile builds the same image with Docker.
IMAGE_REPO ?= ghcr.io/schedstatd/schedstatd
IMAGE_ARCH ?= amd64
IMAGE_TAR  ?= schedstatd-$(VERSION)-$(IMAGE_ARCH).oci.tar
IMAGEBUILD = PATH="$(dir $(GO)):$$PATH" $(GO) run ./internal/imagebuild/cmd -repository $(IMAGE_REPO) -version $(VERSION) \
		-revision $(REVISION) -ldflags '$(LDFLAGS)'
image:
	$(IMAGEBUILD) -arch $(IMAGE_ARCH) -o $(IMAGE_TAR)

# release makes every file of the release VERSION (a tag vX.Y.Z) in DIST,
# up to the push, which it prints: for each of RELEASE_ARCHES the static
# binary in a tarball with LICENSE, README.md and CHANGELOG.md, and the
# image's OCI archive (make image); the chart, linted and packaged with
# the Helm test/chart pins; deploy/'s manifests; and sha256sums.txt. It
# first checks that CHANGELOG.md has the version's section, that the chart's
# appVersion and deploy/'s image tag are VERSION, and that the installed
# binary reports it; it says so when no tag VERSION names HEAD.
RELEASE_ARCHES ?= amd64 arm64
DIST ?= dist
HELM = cd $(CHART_MODULE) && $(GO) tool helm
release:
	@echo "$(VERSION)" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-rc\.[0-9]+)?$$' || { echo "VERSION=$(VERSION): want a tag vX.Y.Z (make release VERSION=v0.1.0)"; exit 1; }
	@grep -q '^## $(VERSION)\b' CHANGELOG.md || { echo "CHANGELOG.md has no '## $(VERSION)' section"; exit 1; }
	@grep -q '^appVersion: $(VERSION)$$' charts/schedstatd/Chart.yaml || { echo "charts/schedstatd/Chart.yaml: appVersion is not $(VERSION)"; exit 1; }
	@grep -q 'image: $(IMAGE_REPO):$(VERSION)$$' deploy/daemonset.yaml && grep -q 'newTag: $(VERSION)$$' deploy/kustomization.yaml || { echo "deploy/: the image tag is not $(VERSION)"; exit 1; }
	rm -rf $(DIST) && mkdir -p $(DIST)/bin
	GOBIN=$(abspath $(DIST))/bin CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/schedstatd
	$(DIST)/bin/schedstatd --version 2>&1 | grep -q 'version $(VERSION) ' || { echo "go install: the binary does not report $(VERSION)"; exit 1; }
	rm -rf $(DIST)/bin
	set -e; for arch in $(RELEASE_ARCHES); do \
		d=schedstatd-$(VERSION).linux-$$arch; mkdir -p $(DIST)/$$d; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$$d/schedstatd ./cmd/schedstatd; \
		cp LICENSE README.md CHANGELOG.md $(DIST)/$$d/; \
		tar -C $(DIST) --owner=0 --group=0 -czf $(DIST)/$$d.tar.gz $$d; rm -rf $(DIST)/$$d; \
		$(IMAGEBUILD) -arch $$arch -o $(DIST)/schedstatd-$(VERSION)-$$arch.oci.tar; \
	done
	$(HELM) lint --strict $(CURDIR)/charts/schedstatd
	$(HELM) package $(CURDIR)/charts/schedstatd --destination $(abspath $(DIST))
	cp deploy/namespace.yaml deploy/daemonset.yaml deploy/service.yaml deploy/podmonitor.yaml deploy/prometheusrule.yaml \
		deploy/scrape-config.yaml deploy/scrape-rbac.yaml deploy/alerts.yaml deploy/grafana-dashboard.json $(DIST)/
	cd $(DIST) && sha256sum * > sha256sums.txt
	@ls -l $(DIST)
	@if [ "$$(git rev-parse -q --verify 'refs/tags/$(VERSION)^{commit}' 2>/dev/null)" != "$$(git rev-parse HEAD)" ]; then \
		echo "NOTE: no tag $(VERSION) names HEAD: these files are a dry run (git tag -a $(VERSION) -m $(VERSION), then make release again)"; fi
	@echo "To publish $(VERSION):"
	@echo "  git push origin $(VERSION)"
	@for arch in $(RELEASE_ARCHES); do echo "  skopeo copy oci-archive:$(DIST)/schedstatd-$(VERSION)-$$arch.oci.tar docker://$(IMAGE_REPO):$(VERSION)-$$arch"; done
	@echo "  (then one index for the tag: crane index append -t $(IMAGE_REPO):$(VERSION) $(foreach a,$(RELEASE_ARCHES),-m $(IMAGE_REPO):$(VERSION)-$(a)))"
	@echo "  helm push $(DIST)/schedstatd-*.tgz oci://ghcr.io/schedstatd/charts"
	@echo "  and attach $(DIST)/* to the GitHub release of $(VERSION), with its CHANGELOG.md section"

run: build
	./schedstatd

# test is what CI runs: the suite on this machine's kernel (test-host),
# then the real-kernel tests again in a VM per supported kernel
# (test-kernels).
test: test-host test-kernels

# test-host is the suite without the VMs: formatting, vet, staticcheck,
# module hygiene, the race-enabled suite, every fuzz target briefly, and
# every benchmark once so none rots.
test-host: test-deps fmt-check vet staticcheck tidy-check
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	$(MAKE) test-chart
	$(MAKE) fuzz-smoke
	$(MAKE) bench-smoke

# test-deps installs the programs the end-to-end tests drive that a fresh
# Debian machine lacks, where it can: as root with apt-get. TEST_TOOLS
# pairs each command with its Debian package: tmux for the live view of
# `top`, promtool (in prometheus) for the alert rules' unit tests,
# containerd, runc and the static busybox its test images are made of for
# the tests against a real container runtime (internal/testkit/containerdtest).
# Elsewhere the tests that need them say what is missing. Another apt-get
# holding the lock (on a shared machine) is waited for, up to ten minutes.
TEST_TOOLS ?= tmux:tmux promtool:prometheus containerd:containerd runc:runc busybox:busybox-static
test-deps:
	@missing=""; for tp in $(TEST_TOOLS); do command -v $${tp%%:*} >/dev/null 2>&1 || missing="$$missing $${tp#*:}"; done; \
	$(call apt-install,the end-to-end tests,the end-to-end tests that drive them will say so)

# apt-install installs the Debian packages in the shell variable missing,
# if any, for $(1), as root with apt-get, waiting up to ten minutes for
# another apt-get holding the lock (on a shared machine); where it cannot,
# it says so and what follows, $(2).
define apt-install
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing$$missing for $(1)"; \
			{ apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing >/dev/null; } || \
				echo "could not install$$missing: $(2)"; \
		else \
			echo "not installed:$$missing ($(2))"; \
		fi; \
	fi
endef

# test-chart runs the Helm chart's tests (helm lint, helm template with
# the default values and others, helm package, decoded strictly into the
# k8s.io/api types and compared with deploy/). They live in test/chart, a
# module of its own that pins helm.sh/helm/v3, so Helm's dependencies stay
# out of schedstatd's go.mod. Cold, that builds Helm's packages: minutes.
CHART_MODULE := test/chart
test-chart:
	cd $(CHART_MODULE) && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

# test-kubelet runs the daemon against a real kubelet in standalone mode
# (static pods) over a real containerd. It builds the kubelet from
# test/kubelet, a module of its own: cold, that downloads about 560 MB of
# modules and compiles k8s.io/kubernetes for minutes, which is why `make
# test` leaves it out.
test-kubelet: test-deps
	$(GO) test -race -count=1 -timeout 40m -tags kubelet -run '^TestKubelet' -v ./cmd/schedstatd/

# test-known-gaps runs the tests of gaps known on main (build tag
# knowngaps): against a real containerd, and of exit capture's hooks; each
# fails until its gap is closed.
test-known-gaps: test-deps
	$(GO) test -race -count=1 -tags knowngaps -run 'Gap' -v ./cmd/schedstatd/ ./exitcapture/

# test-kernels runs the real-kernel tests (schedstat, procsource, cgroupfs, container,
# taskiter, exitcapture, schedlat and the daemon's) inside a virtual machine per
# supported kernel, Debian's 5.10, 6.1 and 6.12, with pure cgroup v2; see
# test/kernels. Kernels come through apt with a configuration of its own and
# are cached in SCHEDSTATD_VM_CACHE (default /var/cache/schedstatd-vm);
# SCHEDSTATD_KERNELS_ONLY=5.10,6.1 picks kernels. KERNEL_PKGS are the Debian
# packages it needs on the host, installed by kernel-deps where missing.
# KERNEL_VMS VMs run at once, each on one host thread: all three, so that
# no host CPU idles while the last kernel runs alone.
KERNEL_PKGS ?= qemu-system-x86 busybox-static
KERNEL_VMS ?= 3
test-kernels: kernel-deps
	SCHEDSTATD_KERNELS=1 $(GO) test -v -count=1 -parallel $(KERNEL_VMS) -timeout 75m ./test/kernels/

kernel-deps:
	@missing=""; for p in $(KERNEL_PKGS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	$(call apt-install,the kernel VMs,make test-kernels will say what is missing)

test-short:
	$(GO) test -short -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

# staticcheck runs a pinned release through the module proxy, so nothing
# needs installing first.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

lint: vet fmt-check staticcheck

fmt-check:
	@out=$$($(dir $(GO))gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# tidy-check keeps its copies in a directory of its own, so runs side by
# side, or by different users, do not clobber each other's.
tidy-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT; \
	cp go.mod go.sum "$$tmp"/; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod "$$tmp"/go.mod || ! cmp -s go.sum "$$tmp"/go.sum; then \
		echo "go.mod/go.sum not tidy; run go mod tidy"; \
		cp "$$tmp"/go.mod "$$tmp"/go.sum .; exit 1; fi

# fuzz runs every fuzz target for FUZZTIME; fuzz-smoke for 20,000 inputs
# each (a few seconds), as CI does. Inputs a fuzzer finds land in
# testdata/fuzz as seeds. The smoke counts inputs rather than time: Go 1.26's
# fuzzing coordinator can fail a target with "context deadline exceeded" as
# a -fuzztime duration ends on a loaded machine (golang/go#75804).
FUZZTIME ?= 60s
fuzz-smoke:
	$(MAKE) fuzz FUZZTIME=20000x

# The targets are found in the test files' source: listing them with
# go test -list would build and link a test binary of every package first.
fuzz:
	@for dir in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go') | xargs -n1 dirname | sort -u); do \
		for f in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
			echo "== ./$$dir $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./$$dir || exit 1; \
		done; \
	done

# soak runs the daemon under thread and process churn for SOAK (the test
# suite runs the same test for one minute).
SOAK ?= 10m
soak:
	SCHEDSTATD_SOAK=$(SOAK) $(GO) test -run '^TestSoak$$' -v -count=1 -timeout 0 ./cmd/schedstatd

# bench writes every benchmark, ten times, to $(BENCHOUT) for benchstat and
# prints the summary; BENCH picks a subset, as -bench does. A failing
# benchmark fails the target.
BENCH ?= .
bench:
	bash -o pipefail -c "$(GO) test -run '^\$$' -bench '$(BENCH)' -benchmem -count=10 -timeout 60m $(PKGS) | tee $(BENCHOUT)"
	$(GO) run golang.org/x/perf/cmd/benchstat@latest $(BENCHOUT)

# bench-smoke runs every benchmark once; -short picks the smallest size of
# each, so the real-thread ones start no more than 2,000 threads.
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime=1x -benchmem -short -timeout 10m $(PKGS)

# bench-daemon runs the real daemon binary over real threads and cgroups,
# BENCH_DAEMON (60s) per design: the default source, the kernel totals,
# the procfs source and a cAdvisor-style reader, one after another, over
# 10,000 threads in 100 cgroups and 20,000 threads in 5,000 cgroups, and
# prints a table (see benchmarks/PERFORMANCE.md). It needs root and takes
# about ten minutes; make test leaves it out (bench-smoke runs its small
# size once).
# SCHEDSTATD_BENCH_WORKLOADS and SCHEDSTATD_BENCH_DESIGNS pick by name
# (threads=20000, schedstatd-procfs), SCHEDSTATD_BENCH_SCRAPE sets the
# scrape interval (10s), SCHEDSTATD_BENCH_PERF=<dir> records perf profiles.
BENCH_DAEMON ?= 60s
bench-daemon: build
	SCHEDSTATD_BIN=$(abspath $(BIN)) SCHEDSTATD_BENCH_DAEMON=$(BENCH_DAEMON) $(GO) test -run '^$$' -bench '^BenchmarkDaemon$$' -benchtime=1x -timeout 60m ./benchmarks/

update-golden:
	$(GO) test ./... -run Golden -update

clean:
	rm -f schedstatd $(BENCHOUT) schedstatd-*.oci.tar
	rm -rf $(DIST)
