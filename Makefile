# checkpointd — see README.md. Every target installs or fetches what it needs.
GO ?= go
PKGS := ./...

.PHONY: build test unit itest fuzz bench demo jars vet clean

build:
	$(GO) build -o bin/checkpointd ./cmd/checkpointd

vet:
	$(GO) vet $(PKGS)

# The jars for real Kafka and MirrorMaker 2 (cached outside the repo).
jars:
	$(GO) run ./infra/kafkatest/cmd/fetchjars

test: vet jars
	$(GO) test -count=1 -timeout 45m $(PKGS)

clean:
	rm -rf bin
