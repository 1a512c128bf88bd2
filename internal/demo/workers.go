package demo

import (
	"context"
	"errors"
	"sync"
)

// workers runs the demo's parts side by side until stopped; the first one
// that fails stops the others.
type workers struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

func newWorkers(ctx context.Context) *workers {
	ctx, cancel := context.WithCancel(ctx)
	return &workers{ctx: ctx, cancel: cancel}
}

// start runs fn with the workers' context. Returning nil before the context
// ends is fine: a part may finish its job early.
func (w *workers) start(fn func(context.Context) error) {
	w.wg.Go(func() {
		if err := fn(w.ctx); err != nil {
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
			w.cancel()
		}
	})
}

// done is closed when the workers are stopping.
func (w *workers) done() <-chan struct{} { return w.ctx.Done() }

// stop cancels every worker, waits for them and returns their failures.
func (w *workers) stop() error {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.errs...)
}
