package demo

import (
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// The cluster aliases, as MM2 would name them in mm2.properties.
const (
	sourceAlias = "source"
	targetAlias = "target"
)

// offsetLagMax is MM2's offset.lag.max for the demo's mirror. MM2 defaults to
// 100; 10 gives a sync every ~11 records, so translations move visibly.
const offsetLagMax = 10

// syncFlushInterval stands in for MM2's offset.flush.interval.ms (default
// 60 s), after which delayed syncs are sent. Short, so the tail of a demo run
// gets its last records synced.
const syncFlushInterval = 2 * time.Second

// topicSpec is a topic the demo producer writes to on the source.
type topicSpec struct {
	name       string
	partitions int32
	rate       float64 // records per second on partition 0; each next partition gets a quarter more
	// filterEvery makes every n-th record a test record that the mirror drops,
	// as an SMT filter would (0: none). The holes are upstream gaps: they
	// trigger syncs and make target offsets differ from source offsets.
	filterEvery int
}

// groupSpec is a consumer group committing on the source.
type groupSpec struct {
	name   string
	topics []string
	// pace is how fast the group consumes relative to the producer:
	// 1 keeps up with the end of the log, 0.5 falls behind at half speed.
	pace        float64
	commitEvery time.Duration
	// stopAt is the fraction of the commit phase after which the group stops
	// committing, like a consumer that went away (0: commits to the end).
	stopAt float64
}

// scenario is what the demo runs.
type scenario struct {
	topics []topicSpec
	groups []groupSpec
}

func defaultScenario() scenario {
	return scenario{
		topics: []topicSpec{
			{name: "orders", partitions: 3, rate: 40},
			{name: "payments", partitions: 2, rate: 20, filterEvery: 7},
		},
		groups: []groupSpec{
			{name: "billing", topics: []string{"orders", "payments"}, pace: 1, commitEvery: 300 * time.Millisecond},
			{name: "analytics", topics: []string{"orders"}, pace: 0.5, commitEvery: time.Second},
			{name: "audit", topics: []string{"payments"}, pace: 1, commitEvery: 500 * time.Millisecond, stopAt: 0.5},
		},
	}
}

// rateOf is partition p's rate: partitions differ, so the table does not
// show copies of the same numbers.
func (t topicSpec) rateOf(p int32) float64 { return t.rate * (1 + float64(p)/4) }

func (s scenario) topic(name string) (topicSpec, bool) {
	for _, t := range s.topics {
		if t.name == name {
			return t, true
		}
	}
	return topicSpec{}, false
}

// partitions lists every source partition of the given topics, in order.
func (s scenario) partitions(topics ...string) []messages.TopicPartition {
	var tps []messages.TopicPartition
	for _, name := range topics {
		t, _ := s.topic(name)
		for p := range t.partitions {
			tps = append(tps, messages.TopicPartition{Topic: t.name, Partition: p})
		}
	}
	return tps
}

func (s scenario) topicNames() []string {
	names := make([]string, len(s.topics))
	for i, t := range s.topics {
		names[i] = t.name
	}
	return names
}
