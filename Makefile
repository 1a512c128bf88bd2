# checkpointd — see README.md. Every target installs or fetches what it needs.
GO ?= go
PKGS := ./...
# How long each fuzz target runs in `make fuzz`. `make test` runs each for a
# count of inputs instead: a count has no wall-clock deadline, and Go's fuzz
# coordinator can fail a target with "context deadline exceeded" (nothing
# found) when its -fuzztime deadline lands on a starved worker.
FUZZTIME ?= 30s
FUZZ_TEST_EXECS ?= 20000x
# package:target pairs, one per fuzz target.
FUZZ_TARGETS := \
	./messages:FuzzDecodeOffsetSync \
	./messages:FuzzDecodeCheckpoint \
	./messages:FuzzDecodeHeartbeat \
	./messages:FuzzDecodeOffsetsRecord \
	./messages:FuzzDefaultReplicationPolicySplit \
	./messages:FuzzGroupPartition \
	./handlers/translate:FuzzIndex \
	./handlers/exact:FuzzLocateNeverSkips \
	./internal/javaregex:FuzzParseList \
	./infra/config:FuzzParseJAAS \
	./infra/config:FuzzParseProperties \
	./infra/config:FuzzProviderRefs \
	./infra/config:FuzzStores \
	./infra/config:FuzzParseTokenResponse

.PHONY: build vet jars jaeger test unit fuzz bench bench-e2e bench-ready bench-scale bench-failover demo clean image

build:
	$(GO) build -o bin/checkpointd ./cmd/checkpointd

# The main job on two embedded clusters, no setup needed.
demo:
	$(GO) run ./cmd/checkpointd-demo

vet:
	$(GO) vet $(PKGS)
	cd deployments && $(GO) vet -mod=mod ./...

# The jars for real Kafka and MirrorMaker 2, fetched once with Maven into a
# cache outside the repo ($$KAFKA_REF_CACHE, else the user cache dir).
jars:
	$(GO) run ./internal/testbed/kafkatest/cmd/fetchjars

# The container image deployments/Dockerfile describes, built without a
# container daemon as one tarball (OCI layout + docker load's manifest.json):
# bin/checkpointd-image.tar, tagged checkpointd:$(IMAGE_VERSION).
IMAGE_VERSION ?= dev
image:
	cd deployments && $(GO) run ./cmd/buildimage -o ../bin/checkpointd-image.tar -version $(IMAGE_VERSION)

# The Jaeger all-in-one the tracing tests export to, built once from the Go
# module proxy into a cache outside the repo ($$JAEGER_TEST_CACHE, else the
# user cache dir): about 2 minutes the first time.
jaeger:
	$(GO) run ./internal/testbed/jaegertest/cmd/buildjaeger

# Unit and integration tests, then every fuzz target for a few seconds.
# Integration tests start real Kafka 4.1.1 clusters and MirrorMaker 2 from the
# jars, and a real Jaeger; they fail (never skip) when Java or Maven is missing.
test: vet jars jaeger
	$(GO) test -count=1 -timeout 45m $(PKGS)
	cd deployments && $(GO) test -mod=mod -count=1 ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_TEST_EXECS)

# Unit tests only, no Kafka.
unit:
	$(GO) test -short -count=1 $(PKGS)

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME); \
	done

# Speed and memory benchmarks; the numbers are printed and kept in bin/bench.txt.
bench:
	@mkdir -p bin
	{ $(GO) test -run '^$$' -bench . -benchmem -count 1 ./messages/ ./handlers/translate/ ./handlers/ && \
	  $(GO) test -run '^$$' -bench '^BenchmarkTracingOverhead$$' -benchmem -count 1 ./pipeline/; } | tee bin/bench.txt

# End-to-end delay from a source commit to the target group, checkpointd vs
# MirrorMaker 2 with 1 s and 60 s intervals, on real Kafka (about 5 minutes);
# appends its table to bin/bench-e2e.txt.
bench-e2e: jars
	@mkdir -p bin
	CHECKPOINTD_E2E_BENCH=1 $(GO) test -count=1 -timeout 20m -run '^TestE2EDelay$$' -v ./pipeline/

# Time from start to ready with 1M offset syncs over 10k partitions and 100k
# checkpoints to replay, on real Kafka (about 2 minutes); appends its table
# to bin/bench-ready.txt. CHECKPOINTD_READY_RUNS (3) starts; with
# CHECKPOINTD_READY_CPUPROFILE=path each start writes path.<run>.
bench-ready: jars
	@mkdir -p bin
	CHECKPOINTD_READY_BENCH=1 $(GO) test -count=1 -timeout 20m -run '^TestReadyTime$$' -v ./pipeline/

# System benchmark: checkpointd vs MM2's MirrorCheckpointConnector in a Connect
# worker, same clusters and load; JSON, report and plots in bench/results/.
# CHECKPOINTD_SCALE_SCENARIOS=all (or a list; scaleout: the checkpointd 1 vs 3
# instance scenarios) and CHECKPOINTD_SCALE_TIME=0.25 select.
# CHECKPOINTD_SCALE_NOOP_HANDLER=1 runs bench/scale/cmd/noophandler in
# checkpointd's place: the same service plus no-op typed handlers for
# checkpoint decisions and target commit results, for their overhead (a row
# with and without it; the JSON's checkpointd_noop_handler says which).
bench-scale: jars
	CHECKPOINTD_SCALE_BENCH=1 $(GO) test -count=1 -timeout 60m -run '^TestScale$$' -v ./bench/scale/

# A planned failover with translate --exact against MM2's rule, on real Kafka
# and real MM2: records replayed and skipped per partition both ways.
# FAILOVER_BENCH_GROUPS (200) groups over 4 partitions (not CHECKPOINTD_*:
# the config loader reads those as overrides).
bench-failover: jars
	FAILOVER_BENCH_GROUPS=$${FAILOVER_BENCH_GROUPS:-200} $(GO) test -count=1 -timeout 30m -run '^TestExactFailoverOnKafka$$' -v ./cmd/checkpointd/

clean:
	rm -rf bin
