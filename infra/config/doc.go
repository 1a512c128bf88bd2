// Package config loads checkpointd's configuration: MirrorMaker 2's
// MirrorCheckpointConnector properties under their own names, from YAML, JSON or Java
// .properties files or from an MM2 driver file (mm2.properties) with one flow, plus
// checkpointd's own keys under "checkpointd.", with environment and --set overrides.
//
// Every problem is reported at once, naming the key, the value and what is allowed;
// unfilled placeholders are named; keys of MM2's other connectors and unknown keys are
// warnings. Effective prints the configuration with secrets redacted, and SaramaConfig
// turns the Kafka client properties into sarama configurations with MM2's precedence.
//
// docs/configuration.md describes every key.
package config
