package pipeline

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

func TestRouterLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  []string // messages that must appear
		not   []string // messages that must not
	}{
		{slog.LevelInfo, []string{"error-msg"}, []string{"info-msg", "debug-msg", "trace-msg"}},
		{slog.LevelDebug, []string{"error-msg", "info-msg", "debug-msg"}, []string{"trace-msg"}},
		{watermill.LevelTrace, []string{"error-msg", "info-msg", "debug-msg", "trace-msg"}, nil},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			l := newRouterLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
			l = l.With(watermill.LogFields{"router": "r"})
			fields := watermill.LogFields{"k": "v"}
			l.Error("error-msg", errors.New("boom"), fields)
			l.Info("info-msg", fields)
			l.Debug("debug-msg", fields)
			l.Trace("trace-msg", fields)
			out := buf.String()
			for _, m := range tc.want {
				if !strings.Contains(out, "msg="+m) {
					t.Errorf("%s missing at level %s:\n%s", m, tc.level, out)
				}
			}
			for _, m := range tc.not {
				if strings.Contains(out, "msg="+m) {
					t.Errorf("%s logged at level %s:\n%s", m, tc.level, out)
				}
			}
			if strings.Contains(out, "msg=info-msg") && !strings.Contains(out, "level=DEBUG msg=info-msg") {
				t.Errorf("Watermill's info not mapped to debug:\n%s", out)
			}
			if !strings.Contains(out, "router=r") || !strings.Contains(out, "k=v") {
				t.Errorf("fields lost:\n%s", out)
			}
		})
	}
}

// A handler's panic, which Watermill's Recoverer turns into an error carrying
// the stack trace (and wrapped with pkg/errors, whose %+v slog's text handler
// prints), is logged on one line: what panicked and where, the stack only at
// debug. Other errors lose their line breaks.
func TestRouterLoggerErrorsOnOneLine(t *testing.T) {
	panicky := middleware.Recoverer(func(*message.Message) ([]*message.Message, error) {
		var m map[string]int
		m["boom"]++ // assignment to entry in nil map
		return nil, nil
	})
	_, panicErr := panicky(message.NewMessage("1", nil))
	if panicErr == nil {
		t.Fatal("Recoverer returned no error")
	}
	for _, tc := range []struct {
		name  string
		err   error
		want  []string
		level slog.Level
	}{
		{"panic", panicErr, []string{`error="handler panicked: assignment to entry in nil map"`, "panic_at=", "routerlog_test.go:"}, slog.LevelInfo},
		{"multi-line error", errors.New("first\n\tsecond\n"), []string{`error="first | second"`}, slog.LevelInfo},
		{"panic at debug", panicErr, []string{"handler panicked", `msg="handler panic stack"`}, slog.LevelDebug},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := newRouterLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
			l.With(watermill.LogFields{"router": "translate"}).Error("Handler returned error", tc.err, watermill.LogFields{"handler": "h"})
			out := buf.String()
			var errLine string
			for line := range strings.Lines(out) {
				if strings.Contains(line, "level=ERROR") {
					errLine = line
				}
			}
			if errLine == "" {
				t.Fatalf("no ERROR line:\n%s", out)
			}
			t.Logf("%s", strings.TrimSpace(errLine))
			if strings.Contains(errLine, `\n`) || strings.Contains(errLine, "goroutine") || strings.Contains(errLine, "stacktrace") {
				t.Errorf("the ERROR line carries a stack or line breaks: %s", errLine)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q missing:\n%s", w, out)
				}
			}
			if !strings.Contains(errLine, "router=translate") || !strings.Contains(errLine, "handler=h") {
				t.Errorf("fields lost: %s", errLine)
			}
		})
	}
}
