package demo

import (
	"sort"
	"sync"

	"github.com/checkpointd/checkpointd/messages"
)

// positions is the mirror's exact knowledge of where each source record went
// on the target, the ground truth a translated offset is checked against.
// It is safe for concurrent use.
type positions struct {
	mu    sync.Mutex
	parts map[messages.TopicPartition]*partitionPositions
}

// partitionPositions holds, for one source partition, every mirrored record
// in upstream order, and how far the mirror has read and written.
type partitionPositions struct {
	upstream   []int64 // offsets of mirrored source records, ascending
	downstream []int64 // where each went on the target
	nextU      int64   // next source offset the mirror will read
	nextD      int64   // next target offset the mirror will write
}

func newPositions() *positions {
	return &positions{parts: make(map[messages.TopicPartition]*partitionPositions)}
}

func (p *positions) part(tp messages.TopicPartition) *partitionPositions {
	pp, ok := p.parts[tp]
	if !ok {
		pp = &partitionPositions{}
		p.parts[tp] = pp
	}
	return pp
}

// mirrored records that source offset u of tp was written at target offset d.
func (p *positions) mirrored(tp messages.TopicPartition, u, d int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.part(tp)
	pp.upstream = append(pp.upstream, u)
	pp.downstream = append(pp.downstream, d)
	pp.nextU, pp.nextD = u+1, d+1
}

// filtered records that source offset u of tp was read and not mirrored.
func (p *positions) filtered(tp messages.TopicPartition, u int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part(tp).nextU = u + 1
}

// targetPosition is where a consumer that committed source offset c on tp
// must resume on the target to read exactly the records it has not read:
// the target offset of the first mirrored record at or after c. known is
// false when the mirror has not read up to c yet; the offset is then the
// target's end, a lower bound.
func (p *positions) targetPosition(tp messages.TopicPartition, c int64) (offset int64, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.part(tp)
	i := sort.Search(len(pp.upstream), func(i int) bool { return pp.upstream[i] >= c })
	if i < len(pp.upstream) {
		return pp.downstream[i], true
	}
	return pp.nextD, c <= pp.nextU
}

// totals reports how many records were mirrored and how many were filtered.
// Source offsets are dense from 0 (the demo producer is not transactional),
// so whatever was read and not mirrored was filtered.
func (p *positions) totals() (mirrored, filtered int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.parts {
		mirrored += int64(len(pp.upstream))
		filtered += pp.nextU - int64(len(pp.upstream))
	}
	return mirrored, filtered
}
