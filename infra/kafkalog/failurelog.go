package kafkalog

import (
	"log/slog"
	"sync"
)

// failureLog logs a failure that a reader retries once per state change: at
// warn when it starts or its error changes, at debug while it repeats
// unchanged, and its end, if it lasted more than one attempt, at info.
// Retries are paced by backoff, so an outage would otherwise print a line
// every few seconds for as long as it lasts; /readyz and the stage health
// say how long it has been failing.
type failureLog struct {
	mu      sync.Mutex
	last    string // the error logged at warn; "" when not failing
	repeats int    // attempts that failed the same way since
}

// failed logs msg with err.
func (f *failureLog) failed(log *slog.Logger, msg string, err error, args ...any) {
	text := err.Error()
	f.mu.Lock()
	same := text == f.last
	if same {
		f.repeats++
	} else {
		f.last, f.repeats = text, 0
	}
	repeats := f.repeats
	f.mu.Unlock()
	args = append(args, "error", err)
	if same {
		log.Debug(msg, append(args, "repeats", repeats)...)
		return
	}
	log.Warn(msg, args...)
}

// ok ends a failure: if one was logged, msg says at info that it is over
// (nothing with msg "", for a caller whose own line says so).
func (f *failureLog) ok(log *slog.Logger, msg string, args ...any) {
	f.mu.Lock()
	was, repeats := f.last, f.repeats
	f.last, f.repeats = "", 0
	f.mu.Unlock()
	if was != "" && msg != "" {
		log.Info(msg, append(args, "failed_attempts", repeats+1)...)
	}
}
