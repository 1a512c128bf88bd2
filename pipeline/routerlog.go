package pipeline

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
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
	l.inner.Error(msg, err, fields) // errors are always wanted
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
