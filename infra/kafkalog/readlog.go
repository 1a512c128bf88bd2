package kafkalog

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ReadLog reads topic with a LogReader from its oldest offsets to the end
// offsets it has when reading starts (or on and on with follow), calling fn
// for every record, for one-off reads such as the CLI's and a new shard
// owner's restore (cfg.BatchRecords makes the read cheaper). It returns fn's
// first error, or ctx's.
func ReadLog(ctx context.Context, cfg ReaderConfig, topic string, follow bool, fn func(envelope.Record) error) error {
	reader, err := NewLogReader(LogReaderConfig{ReaderConfig: cfg})
	if err != nil {
		return err
	}
	defer reader.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, err := reader.Subscribe(ctx, topic)
	if err != nil {
		return fmt.Errorf("read %s on cluster %s: %w", topic, cfg.Cluster, err)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg, ok := <-msgs:
			if !ok {
				return fmt.Errorf("reading %s on cluster %s ended early", topic, cfg.Cluster)
			}
			if ctl, _, _, isCtl := envelope.ControlOf(msg); isCtl {
				msg.Ack()
				if ctl == envelope.CaughtUp && !follow {
					return nil
				}
				continue
			}
			recs, err := envelope.Records(msg)
			msg.Ack()
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if !envelope.IsBatch(msg) {
					rec.Headers = msg.Metadata // a lone record's headers are the message's
				}
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
	}
}

// CheckpointLog reads a checkpoints topic back for a new owner of some
// shards of groups; it implements handlers.CheckpointLog. Reads asked for
// within Gather of each other share one pass over the topic: the
// checkpointer and the commit stage of an instance both restore the same
// shards when a rebalance assigns them, and the topic can hold hundreds of
// thousands of records not compacted yet.
type CheckpointLog struct {
	Reader ReaderConfig
	Topic  string
	Gather time.Duration // how long a read waits for others to join it

	mu      sync.Mutex
	pending *sharedRead // the read still taking readers, if any
}

// sharedRead is one pass over the topic for every reader that joined it.
type sharedRead struct {
	readers []keyReader
	done    chan struct{}
	err     error
}

// keyReader is one reader of a shared pass: the keys it wants (nil: all)
// and what it does with their records.
type keyReader struct {
	keep func(key []byte) bool
	fn   func(envelope.Record)
}

func (k keyReader) wants(key []byte) bool { return k.keep == nil || k.keep(key) }

// ReadCheckpoints calls fn for every record of the topic whose key keep
// accepts (every record with a nil keep), from the oldest to the end the
// topic has when the read starts.
func (l *CheckpointLog) ReadCheckpoints(ctx context.Context, keep func(key []byte) bool, fn func(envelope.Record)) error {
	l.mu.Lock()
	r := l.pending
	if r == nil {
		r = &sharedRead{done: make(chan struct{})}
		l.pending = r
		go l.run(ctx, r)
	}
	r.readers = append(r.readers, keyReader{keep: keep, fn: fn})
	l.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		// The pass goes on for the others; this reader's fn is still
		// called, harmlessly, until it ends.
		return ctx.Err()
	}
}

// run makes the pass of r once the readers had Gather to join, bounded by
// the first reader's ctx.
func (l *CheckpointLog) run(ctx context.Context, r *sharedRead) {
	defer close(r.done)
	select {
	case <-ctx.Done():
	case <-time.After(l.Gather):
	}
	l.mu.Lock()
	l.pending = nil // later readers make a pass of their own
	readers := r.readers
	l.mu.Unlock()
	anyWants := func(key []byte) bool {
		for _, k := range readers {
			if k.wants(key) {
				return true
			}
		}
		return false
	}
	err := ReadBackKeys(ctx, l.Reader, l.Topic, anyWants, func(rec envelope.Record) error {
		for _, k := range readers {
			if len(readers) == 1 || k.wants(rec.Key) {
				k.fn(rec)
			}
		}
		return nil
	})
	if err != nil {
		r.err = fmt.Errorf("read the checkpoints topic %s back: %w", l.Topic, err)
	}
}
