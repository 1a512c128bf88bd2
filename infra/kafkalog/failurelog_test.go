package kafkalog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// errQuiet stands for a success whose caller logs the recovery itself.
var errQuiet = errors.New("quiet success")

func TestFailureLog(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	denied := errors.New("kafka server: The client is not authorized to access this group")
	for _, tc := range []struct {
		name  string
		steps []error // nil: a success
		want  []string
	}{
		{"one failure, then success", []error{refused, nil}, []string{"WARN fail", "INFO works failed_attempts=1"}},
		{"a repeated failure warns once", []error{refused, refused, refused, nil}, []string{"WARN fail", "DEBUG fail", "DEBUG fail", "INFO works failed_attempts=3"}},
		{"a new error warns again", []error{refused, refused, denied, denied}, []string{"WARN fail", "DEBUG fail", "WARN fail", "DEBUG fail"}},
		{"success without failure is quiet", []error{nil, nil}, nil},
		{"after a success the next failure warns", []error{refused, nil, refused}, []string{"WARN fail", "INFO works", "WARN fail"}},
		{"a quiet end", []error{refused, errQuiet, refused}, []string{"WARN fail", "WARN fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				}}))
			var f failureLog
			for _, err := range tc.steps {
				switch err {
				case nil:
					f.ok(log, "works")
				case errQuiet:
					f.ok(log, "")
				default:
					f.failed(log, "fail", err)
				}
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if buf.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), buf.String())
			}
			for i, w := range tc.want {
				level, rest, _ := strings.Cut(w, " ")
				if !strings.Contains(lines[i], "level="+level) || !strings.Contains(lines[i], rest) {
					t.Errorf("line %d = %s, want level %s and %q", i, lines[i], level, rest)
				}
			}
		})
	}
}
