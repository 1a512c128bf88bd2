package config

import "strings"

// clientKey describes a Kafka client property checkpointd maps onto sarama.
type clientKey struct {
	kind  valueKind
	kinds string // the client kinds it applies to: "cpa" (consumer, producer, admin)
}

// clientKeys are the Kafka client properties SaramaConfig understands.
var clientKeys = map[string]clientKey{
	"bootstrap.servers":                                 {typed, "cpa"},
	"client.id":                                         {freeText, "cpa"},
	"client.rack":                                       {freeText, "cpa"},
	"security.protocol":                                 {typed, "cpa"},
	"request.timeout.ms":                                {typed, "cpa"},
	"socket.connection.setup.timeout.ms":                {typed, "cpa"},
	"metadata.max.age.ms":                               {typed, "cpa"},
	"retry.backoff.ms":                                  {typed, "cpa"},
	"sasl.mechanism":                                    {typed, "cpa"},
	"sasl.jaas.config":                                  {freeText, "cpa"},
	"sasl.login.callback.handler.class":                 {className, "cpa"},
	"sasl.kerberos.service.name":                        {freeText, "cpa"},
	"sasl.oauthbearer.token.endpoint.url":               {freeText, "cpa"},
	"sasl.oauthbearer.client.credentials.client.id":     {freeText, "cpa"},
	"sasl.oauthbearer.client.credentials.client.secret": {freeText, "cpa"},
	"sasl.oauthbearer.scope":                            {freeText, "cpa"},
	"sasl.login.connect.timeout.ms":                     {typed, "cpa"},
	"sasl.login.read.timeout.ms":                        {typed, "cpa"},
	"sasl.login.refresh.window.factor":                  {typed, "cpa"},
	"ssl.protocol":                                      {typed, "cpa"},
	"ssl.enabled.protocols":                             {typed, "cpa"},
	"ssl.cipher.suites":                                 {typed, "cpa"},
	"ssl.endpoint.identification.algorithm":             {typed, "cpa"},
	"ssl.truststore.type":                               {typed, "cpa"},
	"ssl.truststore.location":                           {freeText, "cpa"},
	"ssl.truststore.certificates":                       {freeText, "cpa"},
	"ssl.truststore.password":                           {freeText, "cpa"},
	"ssl.keystore.type":                                 {typed, "cpa"},
	"ssl.keystore.location":                             {freeText, "cpa"},
	"ssl.keystore.certificate.chain":                    {freeText, "cpa"},
	"ssl.keystore.key":                                  {freeText, "cpa"},
	"ssl.keystore.password":                             {freeText, "cpa"},
	"ssl.key.password":                                  {freeText, "cpa"},
	"default.api.timeout.ms":                            {typed, "a"},
	"retries":                                           {typed, "pa"},
	"auto.offset.reset":                                 {typed, "c"},
	"enable.auto.commit":                                {typed, "c"},
	"isolation.level":                                   {typed, "c"},
	"fetch.min.bytes":                                   {typed, "c"},
	"fetch.max.wait.ms":                                 {typed, "c"},
	"max.partition.fetch.bytes":                         {typed, "c"},
	"session.timeout.ms":                                {typed, "c"},
	"heartbeat.interval.ms":                             {typed, "c"},
	"group.instance.id":                                 {freeText, "c"},
	"acks":                                              {typed, "p"},
	"compression.type":                                  {typed, "p"},
	"linger.ms":                                         {typed, "p"},
	"batch.size":                                        {typed, "p"},
	"max.request.size":                                  {typed, "p"},
	"enable.idempotence":                                {typed, "p"},
}

// unsupportedClientKeys are Kafka client properties that sarama has no counterpart for
// (or that make no sense for checkpointd's clients); they are ignored with a warning.
var unsupportedClientKeys = []string{
	"ssl.provider", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
	"ssl.secure.random.implementation", "ssl.engine.factory.class", "security.providers",
	"sasl.kerberos.", "sasl.login.", "sasl.client.callback.handler.class", "sasl.oauthbearer.",
	"buffer.memory", "send.buffer.bytes", "receive.buffer.bytes", "reconnect.backoff.",
	"retry.backoff.max.ms", "connections.max.idle.ms", "client.dns.lookup", "max.poll.records",
	"max.poll.interval.ms", "fetch.max.bytes", "interceptor.classes", "metric.reporters",
	"metrics.", "auto.include.jmx.reporter", "enable.metrics.push", "key.serializer",
	"value.serializer", "key.deserializer", "value.deserializer", "partitioner.",
	"auto.commit.interval.ms", "check.crcs", "exclude.internal.topics", "allow.auto.create.topics",
	"partition.assignment.strategy", "group.protocol", "group.remote.assignor", "group.id",
	"max.in.flight.requests.per.connection", "delivery.timeout.ms", "transactional.id",
	"transaction.timeout.ms", "max.block.ms", "client.dns.lookup",
}

func isUnsupportedClientKey(name string) bool {
	for _, u := range unsupportedClientKeys {
		if name == u || strings.HasSuffix(u, ".") && strings.HasPrefix(name, u) {
			return true
		}
	}
	return false
}

// isConnectionKey reports the keys MM2 takes from <side>.cluster.* for every client of
// that side (MirrorClientConfig's CLIENT_CONFIG_DEF: bootstrap.servers,
// security.protocol, ssl.*, sasl.*).
func isConnectionKey(name string) bool {
	return name == "bootstrap.servers" || name == "security.protocol" ||
		strings.HasPrefix(name, "ssl.") || strings.HasPrefix(name, "sasl.")
}

// clientPrefixes are the key families holding client properties, per MM2's MirrorConnectorConfig.
var clientPrefixes = []string{
	"source.cluster.", "target.cluster.",
	"source.consumer.", "target.consumer.",
	"source.producer.", "target.producer.",
	"source.admin.", "target.admin.",
	"consumer.", "producer.", "admin.",
}

// splitClientKey splits source.consumer.fetch.min.bytes into its prefix and property.
func splitClientKey(key string) (prefix, name string, ok bool) {
	for _, p := range clientPrefixes {
		if rest, found := strings.CutPrefix(key, p); found && rest != "" {
			return p, rest, true
		}
	}
	return "", "", false
}
