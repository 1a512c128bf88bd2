package demo

import (
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// groupPartition is one consumer group's progress on one source partition.
type groupPartition struct {
	group string
	tp    messages.TopicPartition
}

// offsetAt is an offset and when it was seen or written.
type offsetAt struct {
	offset int64
	at     time.Time
}

// offsetHistory keeps, per group and partition, the offsets in the order they
// were written, with their times. It is safe for concurrent use.
type offsetHistory struct {
	mu      sync.Mutex
	history map[groupPartition][]offsetAt
}

func newOffsetHistory() *offsetHistory {
	return &offsetHistory{history: make(map[groupPartition][]offsetAt)}
}

func (h *offsetHistory) add(gp groupPartition, offset int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history[gp] = append(h.history[gp], offsetAt{offset, at})
}

// addChanged adds offset unless it is already gp's latest.
func (h *offsetHistory) addChanged(gp groupPartition, offset int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.history[gp]
	if len(list) > 0 && list[len(list)-1].offset == offset {
		return
	}
	h.history[gp] = append(list, offsetAt{offset, at})
}

// latest is the last offset added for gp.
func (h *offsetHistory) latest(gp groupPartition) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.history[gp]
	if len(list) == 0 {
		return 0, false
	}
	return list[len(list)-1].offset, true
}

// firstAt is when offset was first added for gp.
func (h *offsetHistory) firstAt(gp groupPartition, offset int64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.history[gp] {
		if o.offset == offset {
			return o.at, true
		}
	}
	return time.Time{}, false
}

// all returns a copy of every history.
func (h *offsetHistory) all() map[groupPartition][]offsetAt {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[groupPartition][]offsetAt, len(h.history))
	for gp, list := range h.history {
		out[gp] = append([]offsetAt(nil), list...)
	}
	return out
}
