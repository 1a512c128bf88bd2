package demo

import "github.com/checkpointd/checkpointd/messages"

// syncQueue is MM2's OffsetSyncWriter queueing: syncs that the trigger rule
// fires go to pending and are sent promptly; the others are kept as delayed,
// newest per partition, and sent on the next offset flush (MM2 3.7+,
// KAFKA-15906), so the end of a quiet partition is synced too.
type syncQueue struct {
	lagMax   int64
	triggers map[messages.TopicPartition]*syncTrigger
	pending  syncsByPartition
	delayed  syncsByPartition
}

func newSyncQueue(lagMax int64) *syncQueue {
	return &syncQueue{lagMax: lagMax, triggers: make(map[messages.TopicPartition]*syncTrigger)}
}

// record queues the sync for one mirrored record: upstream offset u of tp was
// written at downstream offset d.
func (q *syncQueue) record(tp messages.TopicPartition, u, d int64) {
	trigger, ok := q.triggers[tp]
	if !ok {
		t := newSyncTrigger(q.lagMax)
		trigger = &t
		q.triggers[tp] = trigger
	}
	sync := messages.OffsetSync{TopicPartition: tp, UpstreamOffset: u, DownstreamOffset: d}
	if trigger.update(u, d) {
		q.delayed.remove(tp)
		q.pending.put(sync)
		return
	}
	q.delayed.put(sync)
}

// promoteDelayed is MM2's commit(): every delayed sync becomes pending,
// replacing a pending one for the same partition.
func (q *syncQueue) promoteDelayed() {
	for _, s := range q.delayed.take() {
		q.pending.put(s)
	}
}

// takePending removes and returns the syncs to send, in queue order.
func (q *syncQueue) takePending() []messages.OffsetSync { return q.pending.take() }

// syncsByPartition is an insertion-ordered map from partition to its latest
// sync, like the LinkedHashMaps MM2 uses: overwriting keeps the position.
type syncsByPartition struct {
	order []messages.TopicPartition
	syncs map[messages.TopicPartition]messages.OffsetSync
}

func (m *syncsByPartition) put(s messages.OffsetSync) {
	if m.syncs == nil {
		m.syncs = make(map[messages.TopicPartition]messages.OffsetSync)
	}
	if _, ok := m.syncs[s.TopicPartition]; !ok {
		m.order = append(m.order, s.TopicPartition)
	}
	m.syncs[s.TopicPartition] = s
}

func (m *syncsByPartition) remove(tp messages.TopicPartition) {
	if _, ok := m.syncs[tp]; !ok {
		return
	}
	delete(m.syncs, tp)
	for i, o := range m.order {
		if o == tp {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

func (m *syncsByPartition) take() []messages.OffsetSync {
	out := make([]messages.OffsetSync, 0, len(m.order))
	for _, tp := range m.order {
		out = append(out, m.syncs[tp])
	}
	m.order, m.syncs = nil, nil
	return out
}
