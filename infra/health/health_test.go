package health

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestStage(t *testing.T) {
	boom := errors.New("write checkpoints: TOPIC_AUTHORIZATION_FAILED")
	type step struct {
		after   time.Duration // advance the clock first
		fail    error         // report a failure (else a success, unless check)
		success bool
		check   string // "" = expect ready; else a substring of the error
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"healthy without reports", []step{{check: ""}}},
		{"failing shorter than the timeout", []step{
			{fail: boom}, {after: 10 * time.Second, fail: boom}, {after: 19 * time.Second, check: ""},
		}},
		{"failing longer than the timeout", []step{
			{fail: boom}, {after: 10 * time.Second, fail: boom}, {after: 10 * time.Second, fail: boom},
			{after: 10 * time.Second, check: `stage checkpoint publisher on cluster target "us" failing for 30s (3 failures, last 10s ago): write checkpoints: TOPIC_AUTHORIZATION_FAILED`},
		}},
		{"a success ends the failure", []step{
			{fail: boom}, {after: 25 * time.Second, fail: boom}, {after: time.Second, success: true},
			{after: 5 * time.Second, fail: boom}, {after: 10 * time.Second, check: ""},
		}},
		{"failures that stopped long ago no longer count", []step{
			{fail: boom}, {after: 31 * time.Second, fail: boom}, {check: "failing for 31s"},
			{after: 51 * time.Second, check: ""}, // timeout 30s + 2 × gap 10s
		}},
		{"a failure after a long quiet starts again", []step{
			{fail: boom}, {after: 31 * time.Second, fail: boom},
			{after: 60 * time.Second, fail: boom}, {after: 29 * time.Second, check: ""},
		}},
		{"multi-line errors on one line", []step{
			{fail: errors.New("panic: x\n\tgoroutine 1\n\tmain.go:3")}, {after: 30 * time.Second, fail: boom},
			{fail: errors.New("first\n\n  second\r\n")}, {check: "): first | second"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			var logs bytes.Buffer
			r := New(30*time.Second, slog.New(slog.NewTextHandler(&logs, nil)), WithClock(c.now))
			s := r.Stage("checkpoint publisher", `target "us"`, 10*time.Second)
			r.Stage("idle", "source", time.Second) // never reports
			for i, st := range tc.steps {
				c.advance(st.after)
				switch {
				case st.fail != nil:
					s.Failure(st.fail)
					continue
				case st.success:
					s.Success()
					continue
				}
				err := r.Check()
				if st.check == "" {
					if err != nil {
						t.Errorf("step %d: Check = %v, want nil", i, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), st.check) {
					t.Errorf("step %d: Check = %v, want it to contain %q", i, err, st.check)
				}
				if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
					t.Errorf("step %d: Check error spans lines: %q", i, err)
				}
			}
			if strings.Count(logs.String(), "instance not ready") > 1 {
				t.Errorf("the failure was logged more than once:\n%s", logs.String())
			}
		})
	}
}

// A stage that made the instance not ready logs it once, and its recovery once.
func TestStageLogsStateChanges(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var logs bytes.Buffer
	r := New(time.Second, slog.New(slog.NewTextHandler(&logs, nil)), WithClock(c.now))
	s := r.Stage("target commits", "target", 0)
	for range 5 {
		s.Failure(errors.New("coordinator not available"))
		c.advance(500 * time.Millisecond)
		_ = r.Check()
	}
	s.Success()
	s.Success()
	out := logs.String()
	if n := strings.Count(out, "instance not ready"); n != 1 {
		t.Errorf("%d lines say not ready, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "stage recovered"); n != 1 {
		t.Errorf("%d lines say recovered, want 1:\n%s", n, out)
	}
	if err := r.Check(); err != nil {
		t.Errorf("after a success: %v", err)
	}
}

func TestDefaultTimeout(t *testing.T) {
	if got := New(0, nil).Timeout(); got != DefaultFailureTimeout {
		t.Errorf("Timeout() = %v, want %v", got, DefaultFailureTimeout)
	}
}

// Success on a healthy stage is what readers call per record: no allocation.
func TestSuccessIsCheap(t *testing.T) {
	s := New(time.Second, nil).Stage("reader", "source", 0)
	if n := testing.AllocsPerRun(1000, s.Success); n != 0 {
		t.Errorf("Success allocates %v times", n)
	}
	var nilStage *Stage
	nilStage.Success()
	nilStage.Failure(errors.New("ignored"))
}
