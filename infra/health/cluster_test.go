package health

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// errOut stands for a failure that only says the cluster could not be
// reached; errACL for one that no answering cluster can end.
var (
	errOut = errors.New("kafka: client has run out of available brokers to talk to: connection refused")
	errACL = errors.New("TOPIC_AUTHORIZATION_FAILED")
)

func unreachable(err error) bool { return errors.Is(err, errOut) }

var quiet = slog.New(slog.DiscardHandler)

// Readiness follows the cluster: an idle stage whose failures only said its
// cluster could not be reached stops failing once the cluster answers
// (its probe, or another stage on it recovering) and the stage stays quiet
// for settle; other failures, other clusters and stages that go on failing
// are not cleared.
func TestStageFollowsItsCluster(t *testing.T) {
	const gap = 10 * time.Second // the stage's retry gap
	type step struct {
		after    time.Duration // advance the clock first
		fail     error         // the stage under test fails
		answered string        // ClusterAnswered(answered, now)
		peer     bool          // a peer stage on the same cluster fails, then recovers
		other    bool          // a stage on another cluster fails, then recovers
		check    string        // "" = expect ready; else a substring of the error
	}
	down := func(n int) []step { // failing on every 2 s for n steps, then not ready
		var s []step
		for range n {
			s = append(s, step{fail: errOut, after: 2 * time.Second})
		}
		return append(s, step{check: `stage checkpoints reader on cluster target "t" failing`})
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the probe answers after the outage", append(down(20),
			step{after: time.Second, answered: `target "t"`}, step{after: settle, check: ""})},
		{"not before the stage was quiet for settle", append(down(20),
			step{after: time.Second, answered: `target "t"`}, step{after: settle - 2*time.Second, check: "failing"})},
		{"an answer before the last failure proves nothing", append(down(20),
			step{answered: `target "t"`}, step{after: time.Millisecond, fail: errOut}, step{after: 30 * time.Second, check: "failing"})},
		{"a peer stage on the same cluster recovers", append(down(20),
			step{after: time.Second, peer: true}, step{after: settle, check: ""})},
		{"another cluster answering proves nothing", append(down(20),
			step{after: time.Second, answered: `source "s"`, other: true}, step{after: settle, check: "failing"})},
		{"an authorization failure is not the cluster's", []step{
			{fail: errACL}, {after: 31 * time.Second, fail: errACL}, {after: time.Second, answered: `target "t"`},
			{after: 2 * settle, check: "TOPIC_AUTHORIZATION_FAILED"}}},
		{"a stage failing on within its retry gap stays failing", append(down(20),
			step{after: time.Second, answered: `target "t"`}, step{after: settle, check: ""},
			step{after: 5 * time.Second, fail: errOut}, step{check: "failing for 4"})},
		{"a new outage after a long quiet starts a new streak", append(down(20),
			step{after: time.Second, answered: `target "t"`}, step{after: settle, check: ""},
			step{after: gap + time.Second, fail: errOut}, step{after: time.Second, check: ""})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			r := New(30*time.Second, quiet, WithClock(c.now), WithUnreachable(unreachable))
			s := r.Stage("checkpoints reader", `target "t"`, gap)
			peer := r.Stage("target commits", `target "t"`, time.Second)
			other := r.Stage("source commit reader", `source "s"`, time.Second)
			for i, st := range tc.steps {
				c.advance(st.after)
				if st.fail != nil {
					s.Failure(st.fail)
				}
				if st.answered != "" {
					r.ClusterAnswered(st.answered, c.now())
				}
				if st.peer {
					peer.Failure(errOut)
					peer.Success()
				}
				if st.other {
					other.Failure(errOut)
					other.Success()
				}
				if st.fail != nil || st.answered != "" || st.peer {
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
			}
		})
	}
}

// Without a classifier nothing is cleared by the cluster answering.
func TestStageWithoutClassifier(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	r := New(time.Second, quiet, WithClock(c.now))
	s := r.Stage("checkpoints reader", "target", 10*time.Second)
	s.Failure(errOut)
	c.advance(2 * time.Second)
	s.Failure(errOut)
	c.advance(time.Second)
	r.ClusterAnswered("target", c.now())
	c.advance(settle)
	if err := r.Check(); err == nil {
		t.Error("Check = nil, want the stage failing")
	}
}
