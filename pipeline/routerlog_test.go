package pipeline

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
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
