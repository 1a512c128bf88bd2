package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/messages"
)

// ClusterProbe checks that a Kafka cluster answers, for /readyz: one broker
// must reply to an ApiVersions request. Results are kept for a second so
// frequent probes cost the cluster nothing.
type ClusterProbe struct {
	name string
	dial func() (sarama.Client, error)
	own  bool // the probe made the client and closes it

	cmu    sync.Mutex // guards client; a timed-out check may still hold it
	client sarama.Client

	mu      sync.Mutex // guards the cached result
	checked time.Time
	err     error
}

// NewClusterProbe probes through client, which the caller keeps and closes.
func NewClusterProbe(name string, client sarama.Client) *ClusterProbe {
	return &ClusterProbe{name: name, client: client}
}

// DialClusterProbe makes its own client with dial when first checked (and
// again after a failure to connect) and closes it on Close.
func DialClusterProbe(name string, dial func() (sarama.Client, error)) *ClusterProbe {
	return &ClusterProbe{name: name, dial: dial, own: true}
}

const probeCache = time.Second

// Check reports nil when the cluster answered within ctx.
func (p *ClusterProbe) Check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.checked.IsZero() && time.Since(p.checked) < probeCache {
		return p.err
	}
	done := make(chan error, 1)
	go func() { done <- p.check() }()
	select {
	case p.err = <-done:
	case <-ctx.Done():
		p.err = fmt.Errorf("cluster %s did not answer: %w", p.name, ctx.Err())
		// The check goes on in the background and is discarded.
	}
	p.checked = time.Now()
	return p.err
}

func (p *ClusterProbe) check() error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.client == nil {
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

// Close closes the client the probe made.
func (p *ClusterProbe) Close() error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.own && p.client != nil {
		err := p.client.Close()
		p.client = nil
		return err
	}
	return nil
}

// Join makes one Observer of several; nil ones are left out.
func Join(obs ...handlers.Observer) handlers.Observer {
	var list multi
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return handlers.NopObserver{}
	case 1:
		return list[0]
	}
	return list
}

type multi []handlers.Observer

func (m multi) CheckpointEmitted(cp messages.Checkpoint, committedAt time.Time) {
	for _, o := range m {
		o.CheckpointEmitted(cp, committedAt)
	}
}

func (m multi) CheckpointSkipped(group string, tp messages.TopicPartition, reason string) {
	for _, o := range m {
		o.CheckpointSkipped(group, tp, reason)
	}
}

func (m multi) RecordMalformed(topic string, partition int32, offset int64, err error) {
	for _, o := range m {
		o.RecordMalformed(topic, partition, offset, err)
	}
}

func (m multi) GateOpened() {
	for _, o := range m {
		o.GateOpened()
	}
}
