package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestExactLiveOnKafka: the service with checkpointd.exact.idle.ms writes,
// for groups that stopped committing, the exact translation as an ordinary
// checkpoint after MM2's, and commits it into the idle target groups; a
// consumer starting there replays nothing. A group that keeps committing
// keeps MM2's translation.
func TestExactLiveOnKafka(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	const partitions = 2
	e := newExactBed(t, partitions, func(e *exactBed) { e.noMM2Checkpoints = true })
	for p := range int32(partitions) {
		e.produce(t, p, 700)
	}
	e.waitReplicated(t)
	// Commits between MM2's offset syncs (every 100 records or so).
	idle := []string{e.group(0), e.group(1)}
	commits := map[string]map[int32]int64{idle[0]: {0: 250, 1: 333}, idle[1]: {0: 699, 1: 450}}
	for g, offs := range commits {
		c := map[messages.TopicPartition]int64{}
		for p, off := range offs {
			c[messages.TopicPartition{Topic: e.topic, Partition: p}] = off
		}
		e.bed.Source.CommitOffsets(t, g, c)
	}

	props := map[string]string{
		"source.cluster.alias": e.src, "target.cluster.alias": e.tgt,
		"source.cluster.bootstrap.servers": e.bed.Source.Bootstrap, "target.cluster.bootstrap.servers": e.bed.Target.Bootstrap,
		"groups": e.groupRe, "topics": e.topic, "checkpoints.topic.replication.factor": "1",
		"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
		"checkpointd.exact.idle.ms": "3000", "checkpointd.log.level": "debug",
	}
	p := startProc(t, bin, "exact-live", props)
	p.waitReady(t, 90*time.Second)

	// A busy group commits every half second, always between syncs.
	busy := e.group(2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			e.bed.Source.CommitOffsets(t, busy, map[messages.TopicPartition]int64{{Topic: e.topic, Partition: 0}: 110 + i%80})
		}
	}()
	defer func() { close(stop); <-done }()

	origins := e.origins(t, e.remote, partitions)
	want := map[string]map[messages.TopicPartition]int64{}
	for g, offs := range commits {
		want[g] = map[messages.TopicPartition]int64{}
		for part, c := range offs {
			// The exact position: the first target record not yet read.
			pos := int64(-1)
			for off, src := range origins[part] {
				if src >= c && (pos < 0 || off < pos) {
					pos = off
				}
			}
			want[g][messages.TopicPartition{Topic: e.remote, Partition: part}] = pos
		}
	}
	for _, g := range idle {
		kafkatest.WaitFor(t, 60*time.Second, fmt.Sprintf("group %s on the target at the exact offsets %v", g, want[g]), func() error {
			if got := e.bed.Target.CommittedOffsets(t, g); !maps.Equal(got, want[g]) {
				return fmt.Errorf("offsets %v", got)
			}
			return nil
		})
	}
	// Each idle partition's checkpoints: MM2's translation first, lower,
	// then the exact one.
	byPair := map[string][]int64{}
	for _, m := range e.bed.Target.ReadAll(t, e.src+".checkpoints.internal") {
		cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		byPair[fmt.Sprintf("%s/%d", cp.Group, cp.Partition)] = append(byPair[fmt.Sprintf("%s/%d", cp.Group, cp.Partition)], cp.DownstreamOffset)
	}
	refined := 0
	for _, g := range idle {
		for tp, off := range want[g] {
			seq := byPair[fmt.Sprintf("%s/%d", g, tp.Partition)]
			switch {
			case len(seq) == 0 || seq[len(seq)-1] != off:
				t.Errorf("%s partition %d: checkpoints %v, want the exact %d last", g, tp.Partition, seq, off)
			case seq[0] < off:
				refined++ // MM2's translation first, then the exact one
			}
		}
	}
	if refined == 0 {
		t.Errorf("no partition was short of exact by MM2's rule: checkpoints %v", byPair)
	}
	// The busy group never stays put for 3 s: it is never searched. Each
	// idle partition off a sync is searched once.
	time.Sleep(3 * time.Second)
	log := p.tail(1 << 20)
	searched := 0
	for _, m := range regexp.MustCompile(`msg="exact translation of an idle group" .*group=(\S+)`).FindAllStringSubmatch(log, -1) {
		searched++
		if m[1] == busy {
			t.Errorf("the busy group was searched: %s", m[0])
		}
		if !slices.Contains(idle, m[1]) {
			t.Errorf("a search of group %s", m[1])
		}
	}
	if searched == 0 || searched > 4 {
		t.Errorf("%d searches, want 1 to 4 (one per idle partition off a sync)", searched)
	}
	if scrape := httpGet(t, "http://"+p.addr+"/metrics"); !strings.Contains(scrape, fmt.Sprintf(`checkpointd_exact_translations_total{outcome="exact",source=%q,target=%q} %d`, e.src, e.tgt, searched)) {
		t.Errorf("/metrics lacks %d exact outcomes:\n%s", searched, grepLines(scrape, "exact"))
	}
	t.Logf("%d of 4 idle partitions moved from MM2's translation to the exact one", refined)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
