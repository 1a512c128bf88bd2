package translate

import (
	"math/rand/v2"
	"sort"
)

// This file simulates one mirrored partition end to end for the oracle test:
// the source log, MirrorSourceTask with OffsetSyncWriter producing offset syncs
// (MirrorSourceTask.commitRecord calling maybeQueueOffsetSyncs and
// firePendingOffsetSyncs, commit() promoting the delayed ones), and the target
// log with the true position of every record.

// simParams shape one simulated mirror. Probabilities are per mirrored record.
type simParams struct {
	records   int     // records the mirror acknowledges in total
	lagMax    int64   // offset.lag.max
	pMarker   float64 // a transaction marker follows the record
	pHole     float64 // a compaction hole follows the record
	maxHole   int64
	pFiltered float64 // an SMT drops the record: no target record, no sync
	rtt       int     // acks until a sync send completes (the 10-in-flight cap)
	flushIval int     // acks between commit() calls (offset.flush.interval.ms)
	pRestart  float64 // the source task restarts and re-mirrors from its last flush
	pTruncate float64 // the target log loses its tail (unclean leader election)
	pRecreate float64 // the source topic is deleted and recreated
}

func randomSimParams(rng *rand.Rand) simParams {
	pick := func(p float64, v float64) float64 {
		if rng.Float64() < p {
			return v * rng.Float64()
		}
		return 0
	}
	lags := []int64{0, 1, 3, 10, 100, 100, 100, 1000}
	return simParams{
		records:   1 + rng.IntN(1500),
		lagMax:    lags[rng.IntN(len(lags))],
		pMarker:   pick(0.5, 0.3),
		pHole:     pick(0.5, 0.2),
		maxHole:   1 + rng.Int64N(50),
		pFiltered: pick(0.3, 0.2),
		rtt:       rng.IntN(40),
		flushIval: 1 + rng.IntN(500),
		pRestart:  pick(0.2, 0.005),
		pTruncate: pick(0.1, 0.003),
		pRecreate: pick(0.05, 0.002),
	}
}

// targetRecord is what sits at one target offset: which source record, of
// which incarnation of the source topic.
type targetRecord struct {
	epoch int
	u     int64
}

type sourceRecord struct {
	u        int64
	filtered bool
}

type mirror struct {
	p   simParams
	rng *rand.Rand

	// Source side, current incarnation of the topic.
	epoch  int
	source []sourceRecord // records in offset order; markers and holes are gaps
	head   int64          // source log end offset
	pos    int            // next record the task mirrors
	flush  int            // pos as of the last offset flush: where a restart resumes

	target []targetRecord // the target log; its length is the log end offset
	lost   map[int64]bool // source records of this incarnation that lost a target copy
	// Until a restart or a truncation the current incarnation's records sit in
	// source order from epochStart on, and the truth is a binary search.
	ordered    bool
	epochStart int

	// OffsetSyncWriter's PartitionState and its pending and delayed syncs
	// (KAFKA-15906) for the partition.
	prevU, prevD, lastSyncD int64
	pending, delayed        Sync
	hasPending, hasDelayed  bool
	inFlight                []int // ack tick at which each in-flight send completes
	tick                    int

	syncs []Sync // the offset-sync topic, in produce order

	trace func(format string, args ...any) // nil, or where events are logged

	// Scratch for safePosition: mark[u] == stamp means u was seen.
	mark  []uint32
	stamp uint32
}

func newMirror(p simParams, rng *rand.Rand) *mirror {
	m := &mirror{p: p, rng: rng, lost: make(map[int64]bool), ordered: true}
	m.resetWriter()
	return m
}

func (m *mirror) resetWriter() {
	m.prevU, m.prevD, m.lastSyncD = -1, -1, -1
	m.hasPending, m.hasDelayed = false, false
}

// extendSource appends one record to the source log, then maybe a
// transaction marker or a compaction hole after it.
func (m *mirror) extendSource() {
	m.source = append(m.source, sourceRecord{u: m.head, filtered: m.rng.Float64() < m.p.pFiltered})
	m.head++
	if m.rng.Float64() < m.p.pMarker {
		m.head++
	}
	if m.rng.Float64() < m.p.pHole {
		m.head += 1 + m.rng.Int64N(m.p.maxHole)
	}
}

// step mirrors and acknowledges one record, with whatever happens around it.
func (m *mirror) step() {
	m.tick++
	for len(m.source) <= m.pos+m.rng.IntN(20) {
		m.extendSource() // producers run ahead of the mirror
	}
	live := m.inFlight[:0]
	for _, done := range m.inFlight {
		if done > m.tick {
			live = append(live, done)
		}
	}
	m.inFlight = live

	r := m.source[m.pos]
	m.pos++
	if !r.filtered {
		d := int64(len(m.target))
		m.target = append(m.target, targetRecord{epoch: m.epoch, u: r.u})
		if m.trace != nil { // the arguments alone would allocate
			m.logf("ack %d: source %d -> target %d", m.tick, r.u, d)
		}
		s := Sync{Upstream: r.u, Downstream: d}
		if m.update(r.u, d) {
			m.hasDelayed = false
			m.pending, m.hasPending = s, true
		} else {
			m.delayed, m.hasDelayed = s, true
		}
	}
	m.firePending()

	if m.tick%m.p.flushIval == 0 {
		m.commit()
	}
	switch f := m.rng.Float64(); {
	case f < m.p.pRestart:
		// Unflushed records are mirrored again; the writer state starts afresh.
		m.ordered = m.ordered && m.pos == m.flush
		m.pos = m.flush
		m.resetWriter()
		m.logf("task restart: resume at source %d", m.source[m.pos].u)
	case f < m.p.pRestart+m.p.pTruncate && len(m.target) > 0:
		n := 1 + m.rng.IntN(min(len(m.target), 30))
		for _, r := range m.target[len(m.target)-n:] {
			if r.epoch == m.epoch {
				m.lost[r.u] = true
			}
		}
		m.target = m.target[:len(m.target)-n]
		m.ordered = false
		m.logf("target truncated to %d", len(m.target))
	case f < m.p.pRestart+m.p.pTruncate+m.p.pRecreate:
		m.epoch++
		m.source, m.head, m.pos, m.flush = nil, 0, 0, 0
		clear(m.lost)
		m.epochStart = len(m.target)
		m.logf("source topic recreated")
	}
}

func (m *mirror) logf(format string, args ...any) {
	if m.trace != nil {
		m.trace(format, args...)
	}
}

// update is OffsetSyncWriter's PartitionState.update: whether (u, d) must be
// synced now.
func (m *mirror) update(u, d int64) bool {
	now := m.lastSyncD == -1 ||
		d-(m.lastSyncD+1) >= m.p.lagMax ||
		u-m.prevU != 1 ||
		d < m.prevD
	if now {
		m.lastSyncD = d
	}
	m.prevU, m.prevD = u, d
	return now
}

func (m *mirror) firePending() {
	if m.hasPending && len(m.inFlight) < 10 {
		m.syncs = append(m.syncs, m.pending)
		if m.trace != nil {
			m.logf("sync %+v sent", m.pending)
		}
		m.inFlight = append(m.inFlight, m.tick+m.p.rtt)
		m.hasPending = false
	}
}

// commit is the task's commit() after an offset flush.
func (m *mirror) commit() {
	m.flush = m.pos
	if m.hasDelayed {
		m.pending, m.hasPending, m.hasDelayed = m.delayed, true, false
	}
	m.firePending()
}

// safePosition is the highest target offset a consumer of the current
// incarnation with committed source offset g may resume from without skipping
// a record it has not consumed: every record at or after g that is on the
// target, and not still due to be mirrored (again), must be read at its last
// copy. Records not yet mirrored land at the log end or later. witness is
// the record whose last copy sits at safe, or −1 when safe is the log end.
func (m *mirror) safePosition(g int64) (safe, witness int64) {
	if m.ordered {
		d := m.epochStart + sort.Search(len(m.target)-m.epochStart, func(i int) bool {
			return m.target[m.epochStart+i].u >= g
		})
		if d == len(m.target) {
			return int64(d), -1
		}
		return int64(d), m.target[d].u
	}
	due := m.head // records from here on are still to be mirrored
	if m.pos < len(m.source) {
		due = m.source[m.pos].u
	}
	if int64(len(m.mark)) < m.head {
		m.mark = make([]uint32, 2*m.head)
	}
	m.stamp++
	safe, witness = int64(len(m.target)), -1
	for d := len(m.target) - 1; d >= 0; d-- {
		r := m.target[d]
		if r.epoch != m.epoch || r.u < g || r.u >= due || m.mark[r.u] == m.stamp {
			continue
		}
		m.mark[r.u] = m.stamp // d is the last copy of r.u
		safe, witness = int64(d), r.u
	}
	return safe, witness
}

// replayed counts the records a consumer resuming at target offset from reads
// again or needlessly: those before g, or of an earlier incarnation.
func (m *mirror) replayed(from, g int64) int {
	if m.ordered {
		safe, _ := m.safePosition(g)
		return int(safe - from)
	}
	n := 0
	for _, r := range m.target[from:] {
		if r.epoch != m.epoch || r.u < g {
			n++
		}
	}
	return n
}

// stale reports whether a sync names a target record that is no longer there.
func (m *mirror) stale(s Sync) bool {
	return s.Downstream >= int64(len(m.target)) || m.target[s.Downstream].u != s.Upstream
}
