package translate_test

import (
	"fmt"
	"strings"

	"github.com/checkpointd/checkpointd/handlers/translate"
	"github.com/checkpointd/checkpointd/messages"
)

// The checks of MirrorCheckpointTask.checkpointsForGroup for one group, in its
// order: topic filter, committed offset, translation, then the monotonic rule.
func Example() {
	index := translate.NewIndex(translate.Options{CheckpointsLoaded: true})
	commits := translate.NewCommits()
	emitted := translate.NewCheckpoints()

	replicated := func(topic string) bool { return !strings.HasPrefix(topic, "__") }
	rename := func(tp messages.TopicPartition) messages.TopicPartition {
		return messages.TopicPartition{Topic: "us-west." + tp.Topic, Partition: tp.Partition}
	}
	decide := func(group string, tp messages.TopicPartition, cm translate.Commit) {
		if !replicated(tp.Topic) {
			fmt.Println(tp, translate.ReasonFilteredTopic)
			return
		}
		t := index.Translate(tp, cm.Offset)
		if t.Outcome != translate.Translated {
			fmt.Println(tp, t.Reason)
			return
		}
		if emit, why := emitted.Decide(group, rename(tp), cm.Offset, t.Downstream); !emit {
			fmt.Println(tp, why)
			return
		}
		fmt.Printf("%v checkpoint %d -> %d\n", tp, cm.Offset, t.Downstream)
	}

	orders := messages.TopicPartition{Topic: "orders", Partition: 0}
	index.Apply(orders, 100, 40)
	index.OpenGate() // the offset-sync topic has been read to its end

	commits.Set("billing", orders, translate.Commit{Offset: 250})
	commits.Set("billing", messages.TopicPartition{Topic: "__internal", Partition: 0}, translate.Commit{Offset: 9})
	commits.Set("audit", orders, translate.Commit{Offset: 50})
	for _, group := range []string{"billing", "audit"} {
		commits.ForEachOf(group, func(tp messages.TopicPartition, cm translate.Commit) { decide(group, tp, cm) })
	}

	// A new sync moves the translation: re-decide only the groups on orders.
	if index.Apply(orders, 200, 90) {
		commits.ForEachGroupOn(orders, func(group string, cm translate.Commit) { decide(group, orders, cm) })
	}
	// Unordered output:
	// orders-0 checkpoint 250 -> 41
	// __internal-0 filtered_topic
	// orders-0 behind_oldest_sync
	// orders-0 checkpoint 250 -> 91
	// orders-0 behind_oldest_sync
}
