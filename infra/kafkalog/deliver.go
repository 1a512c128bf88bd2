package kafkalog

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// partitionOut hands one partition's messages to the subscriber channel one
// at a time. The router runs every message in its own goroutine, so waiting
// for each ack is what keeps a partition's messages in order.
type partitionOut struct {
	out       chan<- *message.Message
	nackDelay time.Duration
	// inflight is a message the handler still holds (neither acked nor
	// nacked) when deliver gave up because ctx ended.
	inflight *message.Message
}

// deliver sends msg and waits for its ack. A nack sends a copy again after
// nackDelay: a Watermill message is acked or nacked only once. It returns
// the cause of ctx's end if ctx ends first.
func (o *partitionOut) deliver(ctx context.Context, msg *message.Message) error {
	for {
		select {
		case o.out <- msg:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		select {
		case <-msg.Acked():
			return nil
		case <-msg.Nacked():
		case <-ctx.Done():
			o.inflight = msg
			return context.Cause(ctx)
		}
		if !sleep(ctx, o.nackDelay) {
			return context.Cause(ctx)
		}
		msg = msg.CopyWithContext()
	}
}

// settle waits until the handler has acked or nacked the message deliver
// gave up on, so that a message sent next (Revoked) is not handled while the
// previous one still is. It returns false if ctx ends first.
func (o *partitionOut) settle(ctx context.Context) bool {
	msg := o.inflight
	if msg == nil {
		return true
	}
	select {
	case <-msg.Acked():
	case <-msg.Nacked():
	case <-ctx.Done():
		return false
	}
	o.inflight = nil
	return true
}
