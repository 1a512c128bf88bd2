# checkpointd — see README.md. Every target installs or fetches what it needs.
GO ?= go
PKGS := ./...

.PHONY: build vet jars test clean

build:
	$(GO) build -o bin/checkpointd ./cmd/checkpointd

vet:
	$(GO) vet $(PKGS)

# The jars for real Kafka and MirrorMaker 2, fetched once with Maven into a
# cache outside the repo ($$KAFKA_REF_CACHE, else the user cache dir).
jars:
	$(GO) run ./infra/kafkatest/cmd/fetchjars

# Unit and integration tests. Integration tests start real Kafka 4.1.1
# clusters and MirrorMaker 2 from the jars; they fail (never skip) when Java
# or Maven is missing. `go test -short ./...` runs the unit tests only.
test: vet jars
	$(GO) test -count=1 -timeout 30m $(PKGS)

clean:
	rm -rf bin
