// Package kafkaproto says which versions of the Kafka requests checkpointd
// builds itself (rather than through sarama's clients) it sends for the
// configured Kafka version (checkpointd.kafka.version). Each is the version
// sarama's own admin or consumer picks for that Kafka version, so a request
// never asks a broker for more than the configuration promises, and sarama
// lowers it further to what the broker says it supports.
package kafkaproto

import "github.com/IBM/sarama"

// step: from Kafka version since on, send request version version.
type step struct {
	since   sarama.KafkaVersion
	version int16
}

// table is a request's steps, newest first; below the last, version 0.
type table []step

func (t table) pick(kv sarama.KafkaVersion) int16 {
	for _, s := range t {
		if kv.IsAtLeast(s.since) {
			return s.version
		}
	}
	return 0
}

// listGroups: the admin poller lists the source's groups with it.
var listGroups = table{
	{sarama.V3_8_0_0, 5},  // adds TypesFilter (KIP-848); sent empty: every type
	{sarama.V2_6_0_0, 4},  // adds StatesFilter (KIP-518); sent empty: every state
	{sarama.V2_4_0_0, 3},  // the first flexible version (KIP-482)
	{sarama.V2_0_0_0, 2},  // as v1; the broker throttles after answering (KIP-219)
	{sarama.V0_11_0_0, 1}, // adds the throttle time
}

// describeGroups: the target-groups client describes classic groups with it.
var describeGroups = table{
	{sarama.V2_4_0_0, 5}, // flexible; v4, same Kafka, adds members' group.instance.id (KIP-345)
	{sarama.V2_3_0_0, 3}, // adds authorized operations (KIP-430), not asked for
	{sarama.V2_0_0_0, 2}, // as v1; the broker throttles after answering (KIP-219)
	{sarama.V1_1_0_0, 1}, // adds the throttle time; from 1.1 as sarama's admin sends it
}

// fetch: the tail probe reads a few records with it, outside any fetch
// session.
var fetch = table{
	{sarama.V2_7_0_0, 12}, // flexible, with the last fetched epoch
	{sarama.V2_3_0_0, 11}, // adds the rack id (KIP-392), sent empty
	{sarama.V2_1_0_0, 10}, // zstd batches (KIP-110); v9 added the leader epoch (KIP-320)
	{sarama.V1_1_0_0, 7},  // fetch sessions (KIP-227); the probe opts out with epoch -1
	{sarama.V0_11_0_0, 5}, // isolation level (v4) for transactions, log start offset (v5)
}

// ListGroups is the ListGroups version to send for Kafka version kv.
func ListGroups(kv sarama.KafkaVersion) int16 { return listGroups.pick(kv) }

// DescribeGroups is the DescribeGroups version to send for Kafka version kv.
func DescribeGroups(kv sarama.KafkaVersion) int16 { return describeGroups.pick(kv) }

// Fetch is the Fetch version to send for Kafka version kv.
func Fetch(kv sarama.KafkaVersion) int16 { return fetch.pick(kv) }

// FetchOne is a Fetch request, at the version for Kafka version kv, for one
// partition from offset from, up to size bytes, with the isolation level,
// and outside any fetch session: the one-off reads checkpointd makes of a
// partition's leader itself (a restore's read-back, the tail probe, exact
// translation's record ranges). The broker answers once minBytes are there
// or maxWaitMs have passed.
func FetchOne(kv sarama.KafkaVersion, isolation sarama.IsolationLevel, topic string, partition int32, from int64,
	size, minBytes, maxWaitMs int32) *sarama.FetchRequest {
	req := &sarama.FetchRequest{Version: Fetch(kv), MaxBytes: size, MinBytes: minBytes, MaxWaitTime: maxWaitMs}
	if req.Version >= 4 {
		req.Isolation = isolation
	}
	if req.Version >= 7 { // no fetch session
		req.SessionID, req.SessionEpoch = 0, -1
	}
	req.AddBlock(topic, partition, from, size, -1)
	return req
}
