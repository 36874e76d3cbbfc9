# podtrace: build, test, demo and benchmarks.
# `make demo` and `make test` are the two set-up commands of the README.

GO ?= go
OUT := _output
BIN := $(OUT)/bin
PODTRACE := $(OUT)/podtrace
TEST_TIMEOUT ?= 45m

.PHONY: FORCE all build install image deploy-test example-trace bench-record bench-read bench-soak bench-import cluster-binaries node-binaries kubectl jaeger helm test unit-test browser-deps demo bench cluster-up cluster-down clean

all: build

# VERSION is stamped into the binary (podtrace --version, and each recording
# session): the newest v* tag, with the commits since and -dirty (git describe),
# else v0.1.0-dev+COMMIT (.dirty when the tree has changes).
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || \
	echo "v0.1.0-dev+$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo .dirty)")
# Stripped (-s -w: no symbol table, no DWARF) and without the build machine's
# paths (-trimpath); panics still print function names and lines.
BUILD_FLAGS = -trimpath -ldflags "-s -w -X github.com/podtrace/podtrace/cmd/podtrace/app.Version=$(VERSION)"

## build: the podtrace binary, in _output/podtrace (a minute or two with a
## cold Go cache; hack/progress.sh says every 30 s that it still builds)
build:
	@hack/progress.sh "building podtrace $(VERSION) into $(PODTRACE)" $(OUT)/logs/build.log $(GO) build $(BUILD_FLAGS) -o $(PODTRACE) ./cmd/podtrace

## install: podtrace into $GOBIN (default: $(go env GOPATH)/bin), built as by build
install:
	$(GO) install $(BUILD_FLAGS) ./cmd/podtrace
	@echo "installed podtrace $(VERSION) in $$(d=$$($(GO) env GOBIN); echo $${d:-$$($(GO) env GOPATH)/bin})"

## image: a static podtrace (CGO_ENABLED=0) as an OCI image on an empty base,
## built without a container engine (hack/image, go-containerregistry):
## _output/image/oci (OCI layout) and _output/image/podtrace.tar, which
## `crane push _output/image/podtrace.tar REGISTRY/podtrace:TAG` sends.
## Non-root (65532), entrypoint `/podtrace record`. GOARCH=arm64 for arm64.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
IMAGE ?= podtrace:dev
image:
	mkdir -p $(OUT)/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/podtrace/podtrace/cmd/podtrace/app.Version=$(VERSION)" -o $(OUT)/image/podtrace ./cmd/podtrace
	cd hack/image && $(GO) run . -binary ../../$(OUT)/image/podtrace -arch $$($(GO) env GOARCH) -ref $(IMAGE) -layout ../../$(OUT)/image/oci -tar ../../$(OUT)/image/podtrace.tar

## deploy-test: the manifests in deploy/ built with kustomize, and the Helm
## chart in deploy/helm rendered and installed with helm, on the local control
## plane, recorded with their ServiceAccount's token; the krew manifest in
## deploy/krew checked and installed with krew's own tools; and the image test
## (test/deploy, hack/krew and hack/image are modules of their own).
deploy-test: cluster-binaries helm kubectl
	cd test/deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
	cd hack/krew && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...
	cd hack/image && $(GO) vet ./... && $(GO) test -count=1 -timeout 15m ./...

## cluster-binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
## and kwok, built from the Go module proxy (hack/kube, hack/kwok); cached in
## _output/bin and rebuilt only when the pinned versions change.
cluster-binaries:
	hack/build.sh

## node-binaries: what a real node of the local cluster runs (REAL_NODES=1,
## the real-node tests): the kubelet (hack/kube), containerd and its runc shim
## (hack/containerd), and the busybox and pause images built without a
## container engine; installs the Debian packages runc, containernetworking-plugins
## and busybox-static first (root). Cached in _output/bin like cluster-binaries.
node-binaries:
	hack/build-node.sh

## kubectl: kubectl of the control plane's release (hack/kubectl), for the
## e2e tests of podtrace serve; cached in _output/bin like cluster-binaries.
kubectl:
	hack/build-kubectl.sh

## jaeger: Jaeger v2 (hack/jaeger, with in-memory storage at run time), for
## the e2e tests of the OTLP export; cached in _output/bin like cluster-binaries.
jaeger:
	hack/build-jaeger.sh

## helm: helm (hack/helm, helm.sh/helm/v4), for the test of the chart in
## deploy/helm; cached in _output/bin like kubectl.
helm:
	hack/build-helm.sh

## browser-deps: headless Chromium (Debian package) for the HTML report's browser test.
browser-deps:
	hack/ensure-chromium.sh

## test: every test, unit and integration, on the local control plane.
test: cluster-binaries node-binaries kubectl jaeger browser-deps
	$(GO) vet ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -count=1 ./...
	$(MAKE) deploy-test

## unit-test: the tests that need no control plane.
unit-test:
	$(GO) test -short ./...

## demo: the digester case played on the local control plane, recorded,
## diffed and reported (writes _output/demo/).
demo: build cluster-binaries
	@hack/progress.sh "building the demo (examples/demo)" $(OUT)/logs/demo-build.log $(GO) build -o $(OUT)/demo-run ./examples/demo
	$(OUT)/demo-run -podtrace $(PODTRACE) -out $(OUT)/demo

## example-trace: record the digester case again into examples/trace (the
## sample trace the golden tests and readers without a cluster use).
example-trace: build cluster-binaries
	$(GO) run ./examples/demo -podtrace $(PODTRACE) -out $(OUT)/example -stuck 20s -compare=false
	mkdir -p examples/trace
	cp $(OUT)/example/podtrace.db examples/trace/digester.db
	cp $(OUT)/example/report.html examples/trace/digester-report.html
	cp $(OUT)/example/report.md examples/trace/digester-report.md

## bench: the benchmarks behind BENCHMARKS.md.
bench: build cluster-binaries
	$(GO) test -run "^$$" -bench . -benchmem -count 3 ./store/ ./tracer/ ./diff/
	$(GO) test -run "^$$" -bench . -benchtime 1x -count 3 ./report/
	$(GO) test -run "^$$" -bench 'Command|Recorded' -benchtime 3x -count 3 -timeout 60m ./cmd/podtrace/app/

## bench-record: podtrace record beside a bare informer on a kwok workload (PODS=2000;
## WORKLOAD=rollout: one Deployment of PODS/2 replicas, rolled once, deleted; AUDIT=1: the
## API server's audit log kept and imported into OUT/bench/trace-audit.db).
bench-record: build cluster-binaries
	$(GO) run ./test/bench -pods $(or $(PODS),2000) $(if $(WORKLOAD),-workload $(WORKLOAD)) $(if $(AUDIT),-audit) -podtrace $(PODTRACE) -out $(OUT)/bench

## bench-read: report, report --html, explain, compare and serve's get pods -A on the
## traces bench-record kept (TRACE=$(OUT)/bench/trace.db, comma-separated), RUNS=3 times,
## beside COMPARE (an earlier podtrace binary); then BenchmarkRecorded on them.
bench-read: build kubectl
	$(GO) run ./test/bench/read -trace $(or $(TRACE),$(OUT)/bench/trace.db) -podtrace $(PODTRACE) $(if $(COMPARE),-compare $(COMPARE)) -runs $(or $(RUNS),3)
	PODTRACE_BENCH_TRACE=$(or $(TRACE),$(OUT)/bench/trace.db) $(GO) test -run "^$$" -bench Recorded -benchtime 3x -timeout 60m ./cmd/podtrace/app/

## bench-soak: podtrace record --retain (RETAIN=2m) on a churn of short-lived pods
## for SOAK=7m: file size and RSS over time, the plateau, no revision of a kept pod lost.
bench-soak: build cluster-binaries
	$(GO) run ./test/bench -soak $(or $(SOAK),7m) -retain $(or $(RETAIN),2m) $(if $(MAX_SIZE),-max-size $(MAX_SIZE)) -podtrace $(PODTRACE) -out $(OUT)/soak

## bench-import: podtrace import on synthetic audit logs (SIZES=100M,1G): peak RSS, anon and file RSS, throughput.
bench-import: build
	$(GO) run ./test/bench/auditimport -podtrace $(PODTRACE) -sizes "$${SIZES:-100M,1G}"

## cluster-up / cluster-down: a local control plane to play with by hand
## (NODES=1 kwok nodes; REAL_NODES=1 adds a real node: kubelet, containerd,
## runc, needs root; AUDIT_POLICY=hack/audit-policy.yaml by default,
## AUDIT_POLICY= for none: up prints where the audit log is); down stops
## exactly what up started and undoes what a real node changed.
AUDIT_POLICY ?= hack/audit-policy.yaml
$(BIN)/podtrace-cluster: FORCE
	$(GO) build -o $@ ./test/cluster/cmd/cluster

cluster-up: cluster-binaries $(if $(filter-out 0,$(REAL_NODES)),node-binaries) $(BIN)/podtrace-cluster
	$(BIN)/podtrace-cluster up -nodes $(or $(NODES),1) $(if $(REAL_NODES),-real-nodes $(REAL_NODES)) $(if $(AUDIT_POLICY),-audit-policy $(AUDIT_POLICY))

cluster-down: $(BIN)/podtrace-cluster
	$(BIN)/podtrace-cluster down

FORCE:

clean:
	rm -rf $(OUT)
