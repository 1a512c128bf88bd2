package kafkalog

import (
	"context"
	"errors"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
)

// ErrClosed is returned by Subscribe on a closed reader, and is the cause of
// the contexts of its subscriptions once Close has been called.
var ErrClosed = errors.New("kafkalog: reader closed")

// subscriptions runs a reader's subscriptions and stops them all on close.
type subscriptions struct {
	mu      sync.Mutex
	closed  bool
	cancels []context.CancelCauseFunc
	wg      sync.WaitGroup
}

// start runs fn in its own goroutine with a context that ends with ctx or
// on close, and closes the returned channel when fn returns.
func (s *subscriptions) start(ctx context.Context, fn func(ctx context.Context, out chan<- *message.Message)) (<-chan *message.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	s.cancels = append(s.cancels, cancel)
	out := make(chan *message.Message)
	s.wg.Go(func() {
		defer close(out)
		defer cancel(nil)
		fn(ctx, out)
	})
	return out, nil
}

// close stops every subscription and waits for them to end.
func (s *subscriptions) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, cancel := range s.cancels {
			cancel(ErrClosed)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}
