//go:build tools

// Package deps pins the modules the project is built on, so go mod tidy keeps them
// while the packages that use them are written. Remove once all are imported.
package deps

import (
	_ "github.com/IBM/sarama"
	_ "github.com/ThreeDotsLabs/watermill"
	_ "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "gopkg.in/yaml.v3"
)
