package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// clientError is an unusable client property, named by the key it was given under.
type clientError struct {
	key, value, msg string
}

func (e *clientError) Error() string { return newIssue(e.key, e.value, "%s", e.msg).String() }

// SaramaConfig builds the sarama configuration of one client. Its Kafka client
// properties are merged as MM2 merges them (for the source consumer:
// source.cluster.{bootstrap.servers,security.protocol,ssl.*,sasl.*}, then consumer.*,
// then source.consumer.*) and mapped onto sarama:
//
//	client.id                        prefixes MM2's id: [client.id|]source->target|name|role
//	client.rack                      RackID
//	security.protocol                PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
//	ssl.*                            TLS from JKS, PKCS12 or PEM stores (see tlsConfig)
//	sasl.mechanism, sasl.jaas.config PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (see oauthConfig),
//	                                 GSSAPI with sasl.kerberos.service.name (see gssapiConfig)
//	request.timeout.ms               Net.ReadTimeout
//	socket.connection.setup.timeout.ms Net.DialTimeout
//	metadata.max.age.ms              Metadata.RefreshFrequency
//	retry.backoff.ms                 every Retry.Backoff
//	default.api.timeout.ms (admin)   Admin.Timeout
//	retries (producer, admin)        Producer.Retry.Max, Admin.Retry.Max
//	consumer: auto.offset.reset, isolation.level, fetch.min.bytes, fetch.max.wait.ms,
//	          max.partition.fetch.bytes, session.timeout.ms, heartbeat.interval.ms,
//	          group.instance.id
//	producer: acks, compression.type, linger.ms, batch.size, max.request.size,
//	          enable.idempotence
//
// As in MM2, consumers never auto-commit and start from the earliest offset unless
// auto.offset.reset says otherwise. The protocol version is checkpointd.kafka.version.
// checkpointd's defaults for the source consumer's fetches, where Kafka's
// are 1 byte and 500 ms (see saramaConfig).
const (
	SourceFetchMinBytes = 16 << 10
	SourceFetchMaxWait  = 100 * time.Millisecond
)

func (c *Config) SaramaConfig(role Role) (*sarama.Config, error) {
	sc, err := c.saramaConfig(role)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", role, err)
	}
	return sc, nil
}

func (c *Config) saramaConfig(role Role) (*sarama.Config, error) {
	p := props(c.clientProps(role))
	p[krb5Prop] = clientProp{value: c.Krb5Conf, key: c.krb5From}
	sc := sarama.NewConfig()
	sc.Version = c.KafkaVersion
	if sc.Version == (sarama.KafkaVersion{}) {
		sc.Version = sarama.V4_1_0_0
	}
	sc.ClientID = c.clientID(role, p)
	sc.RackID = strings.TrimSpace(p["client.rack"].value)
	sc.Metadata.AllowAutoTopicCreation = false
	sc.MetricRegistry = discardMetrics{}

	steps := []func(*sarama.Config, props) error{mapCommon, mapSecurity}
	switch role.kind() {
	case "consumer":
		if role == SourceConsumer {
			// The source consumer tails __consumer_offsets, which carries
			// every group's commits. A fetch costs about the same whatever
			// it carries, so fetches that wait for several records cost a
			// fraction of one answered per record. At 100 groups and 400
			// commits/s, 20 / 50 / 100 ms cost 0.16 / 0.11 / 0.08 CPU s per
			// 1,000 commits for a p50 of 36 / 58 / 83 ms (MM2 at 1 s
			// intervals: 0.45 s and 1.46 s). Under load 16 KiB (about 130
			// commit records) fills first and ends the wait: 20 ms at
			// 2,000 commits/s of 4 partitions, where a fetch's cost is
			// already spread over enough records.
			// fetch.min.bytes and fetch.max.wait.ms still override.
			sc.Consumer.Fetch.Min = SourceFetchMinBytes
			sc.Consumer.MaxWaitTime = SourceFetchMaxWait
		}
		steps = append(steps, mapConsumer)
	case "producer":
		steps = append(steps, mapProducer)
	case "admin":
		steps = append(steps, mapAdmin)
	}
	for _, step := range steps {
		if err := step(sc, p); err != nil {
			return nil, err
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("sarama rejects the settings: %w", err)
	}
	return sc, nil
}

// props are a client's resolved properties, with typed readers that name the key a bad
// value was given under.
type props map[string]clientProp

func (p props) has(name string) bool { return strings.TrimSpace(p[name].value) != "" }

func (p props) invalid(name, format string, args ...any) error {
	return &clientError{key: p[name].key, value: p[name].value, msg: fmt.Sprintf(format, args...)}
}

// millis sets *d from a property in milliseconds, if given; lo is the least allowed.
func (p props) millis(name string, lo int64, d *time.Duration) error {
	if !p.has(name) {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(p[name].value), 10, 64)
	if err != nil || n < lo || n > math.MaxInt64/int64(time.Millisecond) {
		return p.invalid(name, "want a whole number of milliseconds, %d or more", lo)
	}
	*d = time.Duration(n) * time.Millisecond
	return nil
}

// int32 sets *v from a whole-number property, if given.
func (p props) int32(name string, lo int64, v *int32) error {
	if !p.has(name) {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(p[name].value), 10, 32)
	if err != nil || n < lo {
		return p.invalid(name, "want a whole number from %d to %d", lo, math.MaxInt32)
	}
	*v = int32(n)
	return nil
}

func (p props) int(name string, lo int64, v *int) error {
	var n int32
	if err := p.int32(name, lo, &n); err != nil || !p.has(name) {
		return err
	}
	*v = int(n)
	return nil
}

func (p props) boolean(name string, v *bool) error {
	if !p.has(name) {
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(p[name].value)) {
	case "true":
		*v = true
	case "false":
		*v = false
	default:
		return p.invalid(name, "want true or false")
	}
	return nil
}

// word returns a property matched case-insensitively against the allowed words, or def.
func (p props) word(name, def string, allowed ...string) (string, error) {
	if !p.has(name) {
		return def, nil
	}
	v := strings.TrimSpace(p[name].value)
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, nil
		}
	}
	return "", p.invalid(name, "want one of %s", strings.Join(allowed, ", "))
}

func mapCommon(sc *sarama.Config, p props) error {
	if p.has("bootstrap.servers") {
		if _, err := parseServers(p["bootstrap.servers"].value); err != nil {
			return p.invalid("bootstrap.servers", "%v", err)
		}
	}
	if err := p.millis("request.timeout.ms", 1, &sc.Net.ReadTimeout); err != nil {
		return err
	}
	if err := p.millis("socket.connection.setup.timeout.ms", 1, &sc.Net.DialTimeout); err != nil {
		return err
	}
	if err := p.millis("metadata.max.age.ms", 0, &sc.Metadata.RefreshFrequency); err != nil {
		return err
	}
	var backoff time.Duration
	if err := p.millis("retry.backoff.ms", 0, &backoff); err != nil {
		return err
	}
	if p.has("retry.backoff.ms") {
		sc.Metadata.Retry.Backoff = backoff
		sc.Consumer.Retry.Backoff = backoff
		sc.Producer.Retry.Backoff = backoff
		sc.Admin.Retry.Backoff = backoff
	}
	return nil
}

func mapSecurity(sc *sarama.Config, p props) error {
	proto, err := p.word("security.protocol", "PLAINTEXT", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
	if err != nil {
		return err
	}
	if proto == "SSL" || proto == "SASL_SSL" {
		tc, err := tlsConfig(p)
		if err != nil {
			return err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		return saslConfig(sc, p)
	}
	return nil
}

func mapConsumer(sc *sarama.Config, p props) error {
	sc.Consumer.Offsets.AutoCommit.Enable = false // MM2 turns auto-commit off for its consumers
	reset, err := p.word("auto.offset.reset", "earliest", "earliest", "latest")
	if err != nil {
		return p.invalid("auto.offset.reset", "want earliest or latest (sarama has no \"none\")")
	}
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	if reset == "latest" {
		sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	if iso, err := p.word("isolation.level", "read_uncommitted", "read_uncommitted", "read_committed"); err != nil {
		return err
	} else if iso == "read_committed" {
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	if err := p.int32("fetch.min.bytes", 1, &sc.Consumer.Fetch.Min); err != nil {
		return err
	}
	if err := p.millis("fetch.max.wait.ms", 1, &sc.Consumer.MaxWaitTime); err != nil {
		return err
	}
	if err := p.int32("max.partition.fetch.bytes", 1, &sc.Consumer.Fetch.Default); err != nil {
		return err
	}
	if err := p.millis("session.timeout.ms", 1, &sc.Consumer.Group.Session.Timeout); err != nil {
		return err
	}
	if err := p.millis("heartbeat.interval.ms", 1, &sc.Consumer.Group.Heartbeat.Interval); err != nil {
		return err
	}
	sc.Consumer.Group.InstanceId = strings.TrimSpace(p["group.instance.id"].value)
	return nil
}

func mapProducer(sc *sarama.Config, p props) error {
	acks, err := p.word("acks", "", "all", "-1", "0", "1")
	if err != nil {
		return err
	}
	switch acks {
	case "all", "-1":
		sc.Producer.RequiredAcks = sarama.WaitForAll
	case "0":
		sc.Producer.RequiredAcks = sarama.NoResponse
	case "1":
		sc.Producer.RequiredAcks = sarama.WaitForLocal
	}
	codec, err := p.word("compression.type", "none", "none", "gzip", "snappy", "lz4", "zstd")
	if err != nil {
		return err
	}
	sc.Producer.Compression = map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}[codec]
	if err := p.millis("linger.ms", 0, &sc.Producer.Flush.Frequency); err != nil {
		return err
	}
	if err := p.int("batch.size", 0, &sc.Producer.Flush.Bytes); err != nil {
		return err
	}
	if err := p.int("max.request.size", 1, &sc.Producer.MaxMessageBytes); err != nil {
		return err
	}
	if err := p.int("retries", 0, &sc.Producer.Retry.Max); err != nil {
		return err
	}
	if err := p.boolean("enable.idempotence", &sc.Producer.Idempotent); err != nil {
		return err
	}
	if sc.Producer.Idempotent {
		sc.Net.MaxOpenRequests = 1 // sarama's condition for idempotence
		if acks == "" {
			sc.Producer.RequiredAcks = sarama.WaitForAll // Java's default once idempotent
		}
	}
	return nil
}

func mapAdmin(sc *sarama.Config, p props) error {
	if err := p.millis("default.api.timeout.ms", 1, &sc.Admin.Timeout); err != nil {
		return err
	}
	return p.int("retries", 0, &sc.Admin.Retry.Max)
}
