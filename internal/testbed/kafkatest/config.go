package kafkatest

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// serverProperties is a single-node KRaft combined broker+controller, sized
// for tests: replication factors 1, few partitions, no rebalance delay, and
// no topic auto-creation so a test that forgets to create a topic fails.
func serverProperties(brokerPort, controllerPort int, dataDir string) map[string]string {
	broker := fmt.Sprintf("127.0.0.1:%d", brokerPort)
	controller := fmt.Sprintf("127.0.0.1:%d", controllerPort)
	return map[string]string{
		"process.roles":                       "broker,controller",
		"node.id":                             "1",
		"controller.quorum.bootstrap.servers": controller,
		// 127.0.0.1, not localhost: localhost may resolve to ::1.
		"listeners":                      "PLAINTEXT://" + broker + ",CONTROLLER://" + controller,
		"advertised.listeners":           "PLAINTEXT://" + broker + ",CONTROLLER://" + controller,
		"inter.broker.listener.name":     "PLAINTEXT",
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                       dataDir,
		"num.partitions":                 "1",
		"default.replication.factor":     "1",
		// With the default of 3 on one broker __consumer_offsets is never created.
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
		// Below the brokers' default of 6 s, so tests can show a takeover
		// with a shorter commit-lease session (TestShardedHandover).
		"group.min.session.timeout.ms":         "2000",
		"offsets.topic.num.partitions":         "4",
		"transaction.state.log.num.partitions": "4",
		"auto.create.topics.enable":            "false",
		"num.network.threads":                  "2",
		"num.io.threads":                       "4",
	}
}

// quorumProperties turn one node of serverProperties into node id of a
// multi-node cluster whose controllers listen on controllers (in id order).
// Internal topics are replicated to up to three nodes, but one replica in
// sync is enough for writes, so one node down never blocks producers,
// group commits or transactions.
func quorumProperties(id int32, controllers []string) map[string]string {
	rf := strconv.Itoa(min(len(controllers), 3))
	return map[string]string{
		"node.id":                                          strconv.Itoa(int(id)),
		"controller.quorum.bootstrap.servers":              strings.Join(controllers, ","),
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              "1",
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            "1",
		// A multiple of three, so each of three nodes leads as many group
		// coordinators.
		"offsets.topic.num.partitions": "6",
	}
}

// multiNodeHeap replaces testJVMFlags' heap for the nodes of a multi-node
// cluster: three of them beside the other test JVMs on a small machine.
var multiNodeHeap = []string{"-Xms128m", "-Xmx384m"}

// log4j2Properties writes everything at INFO to one file, so readiness
// ("Kafka Server started") can be seen; log4j2's default config logs only errors.
func log4j2Properties(logFile string) string {
	return strings.Join([]string{
		"status = warn",
		"appender.file.type = File",
		"appender.file.name = FILE",
		"appender.file.fileName = " + logFile,
		"appender.file.layout.type = PatternLayout",
		"appender.file.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = INFO",
		"rootLogger.appenderRef.file.ref = FILE",
		"logger.request.name = kafka.request.logger",
		"logger.request.level = WARN",
		"logger.statechange.name = state.change.logger",
		"logger.statechange.level = WARN",
		"",
	}, "\n")
}

// writeProperties writes a Java properties file in a stable key order.
// Backslashes are escaped; the values here hold no other special characters.
func writeProperties(path string, props map[string]string) error {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(props[k], `\`, `\\`))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// newClusterID makes a Kafka cluster id the way Uuid.randomUuid renders one:
// 16 random bytes, base64url without padding, never starting with '-'.
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if id[0] != '-' {
			return id
		}
	}
}
