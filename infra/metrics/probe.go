package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// ClusterProbe checks that a Kafka cluster answers, for /readyz: one broker
// must reply to an ApiVersions request. Check never waits on the cluster for
// long: the request runs in the background, one at a time, and Check waits
// for it at most a short while (probeWait), else answers with what it knows.
// A check still unanswered after probeTimeout counts as a failure. Results
// are kept for a second so frequent probes cost the cluster nothing.
type ClusterProbe struct {
	name string
	dial func() (sarama.Client, error)
	own  bool // the probe made the client and closes it

	cmu    sync.Mutex // guards client; a check that did not answer may still hold it
	client sarama.Client

	mu      sync.Mutex // guards the fields below; never held across I/O
	checked time.Time  // when the last check ended
	err     error      // its result
	running chan struct{}
	started time.Time // of the running check
	closed  bool
	// answered is when the last check that the cluster answered was
	// started: the cluster was up after that moment.
	answered time.Time
}

// NewClusterProbe probes through client, which the caller keeps and closes.
func NewClusterProbe(name string, client sarama.Client) *ClusterProbe {
	return &ClusterProbe{name: name, client: client}
}

// DialClusterProbe makes its own client with dial when first checked (and
// again after a failure to connect) and closes it on Close. Its connection is
// its own, so the probe never waits behind the pipeline's requests.
func DialClusterProbe(name string, dial func() (sarama.Client, error)) *ClusterProbe {
	return &ClusterProbe{name: name, dial: dial, own: true}
}

const (
	probeCache   = time.Second
	probeWait    = 300 * time.Millisecond // the longest Check waits for an answer
	probeTimeout = 2 * time.Second        // an answer later than this is a failure
)

// Name is the cluster's name in the probe's errors.
func (p *ClusterProbe) Name() string { return p.name }

// Check reports nil when the cluster answered the last check. It returns
// within probeWait (or ctx, if sooner).
func (p *ClusterProbe) Check(ctx context.Context) error {
	p.mu.Lock()
	if p.running == nil && !p.checked.IsZero() && time.Since(p.checked) < probeCache {
		err := p.err
		p.mu.Unlock()
		return err
	}
	if p.running == nil && !p.closed {
		p.running, p.started = make(chan struct{}), time.Now()
		go p.run(p.running, p.started)
	}
	running, started := p.running, p.started
	p.mu.Unlock()

	if running != nil {
		wait := time.NewTimer(probeWait)
		defer wait.Stop()
		select {
		case <-running:
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil || p.running != running {
		if p.checked.IsZero() {
			return fmt.Errorf("cluster %s: not checked (probe closed)", p.name)
		}
		return p.err // the check ended
	}
	if took := time.Since(started); took >= probeTimeout {
		return fmt.Errorf("cluster %s did not answer within %s (no answer for %s)", p.name, probeTimeout, took.Round(100*time.Millisecond))
	}
	if p.checked.IsZero() {
		return fmt.Errorf("cluster %s: no answer yet", p.name)
	}
	return p.err // the previous result until this check ends or times out
}

// Answered is when the last check the cluster answered was sent (zero if
// none was): the cluster was up at some moment after it.
func (p *ClusterProbe) Answered() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered
}

// run makes one check and stores its result.
func (p *ClusterProbe) run(done chan struct{}, started time.Time) {
	err := p.check()
	p.mu.Lock()
	p.err, p.checked, p.running = err, time.Now(), nil
	if err == nil {
		p.answered = started
	}
	p.mu.Unlock()
	close(done)
}

func (p *ClusterProbe) check() error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.client == nil {
		if p.dial == nil {
			return fmt.Errorf("cluster %s: probe closed", p.name)
		}
		c, err := p.dial()
		if err != nil {
			return fmt.Errorf("cluster %s unreachable: %w", p.name, err)
		}
		p.client = c
	}
	b := p.client.LeastLoadedBroker()
	if b == nil {
		return fmt.Errorf("cluster %s: no broker known", p.name)
	}
	if ok, _ := b.Connected(); !ok {
		if err := b.Open(p.client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return fmt.Errorf("cluster %s: broker %s: %w", p.name, b.Addr(), err)
		}
	}
	if _, err := b.ApiVersions(&sarama.ApiVersionsRequest{}); err != nil {
		_ = b.Close() // reconnect on the next check
		return fmt.Errorf("cluster %s: broker %s did not answer: %w", p.name, b.Addr(), err)
	}
	return nil
}

// Close closes the client the probe made; if a check is still waiting for
// the cluster, once it ends, without waiting for it.
func (p *ClusterProbe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if !p.cmu.TryLock() {
		go func() {
			p.cmu.Lock()
			defer p.cmu.Unlock()
			_ = p.closeClient()
		}()
		return nil
	}
	defer p.cmu.Unlock()
	return p.closeClient()
}

func (p *ClusterProbe) closeClient() error {
	p.dial = nil
	if p.own && p.client != nil {
		err := p.client.Close()
		p.client = nil
		return err
	}
	return nil
}
