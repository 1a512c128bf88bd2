package targetgroups

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// DefaultCommitConnections is how many connections per coordinator broker
// OffsetCommits use at most, unless WithCommitConnections says otherwise.
// Against one Kafka 4.1 broker, 1,000 commits from 16 workers took 8.4 s
// over one connection, 1.5 s over 4, 0.9 s over 8 and 0.8 s over 16. Each
// commit waits at least group.coordinator.append.linger.ms (5 ms by
// default) for its write; concurrent commits share that wait.
const DefaultCommitConnections = 32

// commitIdleTimeout: an idle commit connection unused for this long is
// closed instead of used. Brokers close connections idle for
// connections.max.idle.ms (10 minutes by default), and a request on such a
// connection fails and costs the commit a retry.
const commitIdleTimeout = 5 * time.Minute

// WithCommitConnections sets how many connections per coordinator broker
// OffsetCommits use at most, so that commits into groups on one coordinator
// overlap: sarama sends one request at a time per connection. They are
// connections of their own, besides the client's, opened when first needed
// with the client's configuration (TLS, SASL) and kept for the next
// commits. n <= 0 sends every commit over the client's connection to the
// coordinator, one at a time per broker.
func WithCommitConnections(n int) Option {
	return func(c *Client) { c.commits.max = max(n, 0) }
}

// CommitConnStats counts the extra connections OffsetCommits use.
type CommitConnStats struct {
	Open   int   // open now, idle or in use
	Opened int64 // opened since the client was made
	Closed int64 // closed since: after a failed request, idle too long, broker moved, Close
}

// CommitConnections reports the connections OffsetCommits use.
func (c *Client) CommitConnections() CommitConnStats {
	return c.commits.stats()
}

// Close closes the connections OffsetCommits use; a commit in flight closes
// its connection when it is done, and commits after Close use the client's
// own connections. The sarama client is not closed: it is borrowed.
func (c *Client) Close() error {
	return c.commits.close()
}

// brokerKey names a broker at an address: a broker that comes back at
// another address gets connections of its own.
type brokerKey struct {
	id   int32
	addr string
}

// commitConns is a pool of connections per coordinator broker, used only
// for OffsetCommit. A connection serves one commit at a time; a commit
// takes an idle one, or opens one while the broker has fewer than max, or
// waits for one.
type commitConns struct {
	conf   *sarama.Config
	max    int
	logger *slog.Logger
	dial   func(addr string, conf *sarama.Config) (*sarama.Broker, error)
	idle   time.Duration        // an idle connection unused this long is closed
	onOpen func(*sarama.Broker) // tests: hears every connection opened

	mu       sync.Mutex
	brokers  map[brokerKey]*brokerConns
	closed   bool
	opened   int64
	closedN  int64
	warnedAt time.Time // last warning about a connection that failed to open
}

// brokerConns are one broker's commit connections.
type brokerConns struct {
	slots chan struct{} // one per connection in use or being opened
	idle  []idleConn    // oldest first
	gone  bool          // the broker moved to another address, or the pool closed
}

type idleConn struct {
	b     *sarama.Broker
	since time.Time
}

func newCommitConns(conf *sarama.Config, logger *slog.Logger) *commitConns {
	return &commitConns{
		conf:    conf,
		max:     DefaultCommitConnections,
		idle:    commitIdleTimeout,
		logger:  logger,
		dial:    openBroker,
		brokers: make(map[brokerKey]*brokerConns),
	}
}

// openBroker opens a connection to addr and waits until it is usable
// (connected, API versions read, authenticated) or failed.
func openBroker(addr string, conf *sarama.Config) (*sarama.Broker, error) {
	b := sarama.NewBroker(addr)
	if err := b.Open(conf); err != nil {
		return nil, err
	}
	ok, err := b.Connected() // waits for Open to finish
	if !ok {
		if err == nil {
			err = sarama.ErrNotConnected
		}
		return nil, err
	}
	return b, nil
}

// commit sends req to the coordinator coord over one of its commit
// connections. When none can be opened it falls back to coord, the
// client's own connection, so a broker refusing more connections slows
// commits down but does not stop them.
func (p *commitConns) commit(ctx context.Context, coord *sarama.Broker, req *sarama.OffsetCommitRequest) (*sarama.OffsetCommitResponse, error) {
	bc, conn, err := p.get(ctx, coord)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		p.warnOpen(coord, err)
		fallthrough
	case conn == nil: // pooling off, or closed
		if err := targetgroup.CheckBeforeSend(ctx); err != nil {
			return nil, err
		}
		return coord.CommitOffset(req)
	}
	// After the wait for a connection, which a paused process may have
	// spent paused.
	if err := targetgroup.CheckBeforeSend(ctx); err != nil {
		p.put(bc, conn, nil)
		return nil, err
	}
	resp, err := conn.CommitOffset(req)
	p.put(bc, conn, err)
	return resp, err
}

// get takes a connection to coord, waiting for one while coord has max
// in use. A nil connection and no error mean: use coord itself.
func (p *commitConns) get(ctx context.Context, coord *sarama.Broker) (*brokerConns, *sarama.Broker, error) {
	if p.max <= 0 {
		return nil, nil, nil
	}
	key := brokerKey{id: coord.ID(), addr: coord.Addr()}
	var stale []*sarama.Broker
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, nil
	}
	bc := p.brokers[key]
	if bc == nil {
		for k, other := range p.brokers {
			if k.id == key.id { // the broker's address changed
				stale = append(stale, p.retireLocked(k, other)...)
			}
		}
		bc = &brokerConns{slots: make(chan struct{}, p.max)}
		p.brokers[key] = bc
	}
	p.mu.Unlock()
	closeAll(stale)

	select {
	case bc.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}

	p.mu.Lock()
	if p.closed || bc.gone {
		p.mu.Unlock()
		<-bc.slots
		return nil, nil, nil
	}
	stale = p.expireLocked(time.Now())
	var conn *sarama.Broker
	if last := len(bc.idle) - 1; last >= 0 {
		conn = bc.idle[last].b
		bc.idle = bc.idle[:last]
	}
	p.mu.Unlock()
	closeAll(stale)
	if conn != nil {
		return bc, conn, nil
	}

	conn, err := p.dial(key.addr, p.conf)
	if err != nil {
		<-bc.slots
		return nil, nil, err
	}
	p.mu.Lock()
	p.opened++
	onOpen := p.onOpen
	p.mu.Unlock()
	if onOpen != nil {
		onOpen(conn)
	}
	return bc, conn, nil
}

// put gives conn back after a request that ended with err. A connection
// whose request failed is closed, not reused: a network error broke it,
// and after any other failure its stream may be out of step. The broker's
// idle connections are closed with it: when the broker restarted or a
// network path broke they are dead too, and a commit retried on them one
// after another would spend its retries.
func (p *commitConns) put(bc *brokerConns, conn *sarama.Broker, err error) {
	var stale []*sarama.Broker
	p.mu.Lock()
	keep := err == nil && !bc.gone && !p.closed
	if keep {
		bc.idle = append(bc.idle, idleConn{b: conn, since: time.Now()})
	} else {
		stale = append(stale, conn)
		if err != nil {
			for _, ic := range bc.idle {
				stale = append(stale, ic.b)
			}
			bc.idle = nil
		}
		p.closedN += int64(len(stale))
	}
	p.mu.Unlock()
	closeAll(stale) // sarama may have closed conn already
	<-bc.slots
}

// expireLocked takes the connections idle for p.idle out of the
// pool, of every broker (a broker no longer coordinator of any group keeps
// none), and returns them to close.
func (p *commitConns) expireLocked(now time.Time) []*sarama.Broker {
	var expired []*sarama.Broker
	for _, bc := range p.brokers {
		n := 0
		for n < len(bc.idle) && now.Sub(bc.idle[n].since) >= p.idle {
			expired = append(expired, bc.idle[n].b)
			n++
		}
		bc.idle = bc.idle[n:]
	}
	p.closedN += int64(len(expired))
	return expired
}

// retireLocked drops a broker's entry and returns its idle connections to
// close; the ones in use are closed when their commit is done.
func (p *commitConns) retireLocked(key brokerKey, bc *brokerConns) []*sarama.Broker {
	delete(p.brokers, key)
	bc.gone = true
	conns := make([]*sarama.Broker, 0, len(bc.idle))
	for _, ic := range bc.idle {
		conns = append(conns, ic.b)
	}
	bc.idle = nil
	p.closedN += int64(len(conns))
	return conns
}

func (p *commitConns) close() error {
	p.mu.Lock()
	p.closed = true
	var conns []*sarama.Broker
	for k, bc := range p.brokers {
		conns = append(conns, p.retireLocked(k, bc)...)
	}
	p.mu.Unlock()
	var errs []error
	for _, b := range conns {
		if err := b.Close(); err != nil && !errors.Is(err, sarama.ErrNotConnected) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *commitConns) stats() CommitConnStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return CommitConnStats{Open: int(p.opened - p.closedN), Opened: p.opened, Closed: p.closedN}
}

// warnOpen logs a connection that failed to open, at most once a minute.
func (p *commitConns) warnOpen(coord *sarama.Broker, err error) {
	p.mu.Lock()
	now := time.Now()
	warn := now.Sub(p.warnedAt) >= time.Minute
	if warn {
		p.warnedAt = now
	}
	p.mu.Unlock()
	if warn {
		p.logger.Warn("could not open an extra connection for offset commits; committing over the client's connection, one at a time",
			"broker", coord.ID(), "addr", coord.Addr(), "error", err)
	}
}

func closeAll(conns []*sarama.Broker) {
	for _, b := range conns {
		_ = b.Close()
	}
}
