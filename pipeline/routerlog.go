package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/checkpointd/checkpointd/infra/health"
)

// routerLogger adapts a slog.Logger for Watermill's routers. Watermill's
// own slog adapter turns a call's fields into attributes before slog
// checks the level, and routers log at trace level for every message: on
// the whole-topic readers that was an eighth of the CPU at start-up. This
// one asks the level first.
type routerLogger struct {
	slog  *slog.Logger
	inner watermill.LoggerAdapter
}

// Watermill's levels as checkpointd maps them: its per-message chatter
// (info and below) goes to debug and trace.
var routerLevels = map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug}

func newRouterLogger(logger *slog.Logger) watermill.LoggerAdapter {
	return routerLogger{slog: logger, inner: watermill.NewSlogLoggerWithLevelMapping(logger, routerLevels)}
}

func (l routerLogger) enabled(level slog.Level) bool {
	if mapped, ok := routerLevels[level]; ok {
		level = mapped
	}
	return l.slog.Enabled(context.Background(), level)
}

func (l routerLogger) Error(msg string, err error, fields watermill.LogFields) {
	// Errors are always wanted, on one line: slog's text handler prints an
	// error with %+v, which for Watermill's pkg/errors values is the whole
	// stack trace, and a recovered panic carries one in its message.
	var p middleware.RecoveredPanicError
	if errors.As(err, &p) {
		at := panicSite(p.Stacktrace)
		l.slog.Debug("handler panic stack", "panic", fmt.Sprint(p.V), "stack", p.Stacktrace)
		fields = fields.Add(watermill.LogFields{"panic_at": at})
		err = lineError{msg: fmt.Sprintf("handler panicked: %v", p.V), err: err}
	} else if err != nil {
		err = lineError{msg: health.OneLine(err.Error()), err: err}
	}
	l.inner.Error(msg, err, fields)
}

// lineError is an error printed as one line whatever the verb (%+v too),
// keeping the original for errors.Is and As.
type lineError struct {
	msg string
	err error
}

func (e lineError) Error() string { return e.msg }
func (e lineError) Unwrap() error { return e.err }

// panicSite returns the file:line where a panic was raised, from the stack
// trace debug.Stack gives: the first frame after runtime's panic.
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "panic(") {
			continue
		}
		// panic(...) / its file line / the panicking function / its file line
		if i+3 < len(lines) {
			fn := strings.TrimSpace(lines[i+2])
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			file := strings.TrimSpace(lines[i+3])
			if j := strings.LastIndex(file, " +0x"); j > 0 {
				file = file[:j]
			}
			return fn + " at " + file
		}
	}
	return "unknown"
}

func (l routerLogger) Info(msg string, fields watermill.LogFields) {
	if l.enabled(slog.LevelInfo) {
		l.inner.Info(msg, fields)
	}
}

func (l routerLogger) Debug(msg string, fields watermill.LogFields) {
	if l.enabled(slog.LevelDebug) {
		l.inner.Debug(msg, fields)
	}
}

func (l routerLogger) Trace(msg string, fields watermill.LogFields) {
	if l.enabled(watermill.LevelTrace) {
		l.inner.Trace(msg, fields)
	}
}

func (l routerLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return routerLogger{slog: l.slog, inner: l.inner.With(fields)}
}
