package adminpoll

import (
	"log/slog"
	"sync"
	"time"
)

// Stats counts what the poller did since it started.
type Stats struct {
	Polls            uint64        // polls made
	ListFailures     uint64        // polls whose group listing missed a broker
	GroupFailures    uint64        // group offset fetches that failed, over all polls
	Records          uint64        // records delivered and acked (tombstones included)
	Nacks            uint64        // deliveries nacked and sent again
	Groups           int           // groups listed and kept by the filter in the last poll
	LastPollDuration time.Duration // listing and fetching, without delivery
}

type statsRecorder struct {
	mu sync.Mutex
	s  Stats
}

func (r *statsRecorder) polled(d time.Duration, groups, failedGroups int, listFailed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Polls++
	r.s.GroupFailures += uint64(failedGroups)
	if listFailed {
		r.s.ListFailures++
	}
	r.s.Groups = groups
	r.s.LastPollDuration = d
}

func (r *statsRecorder) delivered() {
	r.mu.Lock()
	r.s.Records++
	r.mu.Unlock()
}

func (r *statsRecorder) nacked() {
	r.mu.Lock()
	r.s.Nacks++
	r.mu.Unlock()
}

func (r *statsRecorder) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// failures remembers what failing was last logged, so that a failure that
// lasts is logged once when it starts or changes, and once when it ends, not
// every interval.
type failures struct {
	listing string            // the listing's last error, "" when it worked
	groups  map[string]string // group -> its last fetch error
}

func (f *failures) log(log *slog.Logger, res pollResult, listErr error) {
	switch {
	case listErr != nil && f.listing != listErr.Error():
		log.Warn("listing groups missed a broker; its groups are neither fetched nor taken as deleted this poll", "error", listErr)
		f.listing = listErr.Error()
	case listErr == nil && f.listing != "":
		log.Info("listing groups works again")
		f.listing = ""
	}
	if f.groups == nil {
		f.groups = make(map[string]string)
	}
	for g, err := range res.failed {
		if f.groups[g] != err.Error() {
			log.Warn("fetching group offsets failed; retrying next poll", "group", g, "error", err)
			f.groups[g] = err.Error()
		}
	}
	for g := range f.groups {
		if _, ok := res.failed[g]; ok {
			continue
		}
		if _, ok := res.offsets[g]; ok {
			log.Info("fetching group offsets works again", "group", g)
		}
		delete(f.groups, g) // recovered, or gone
	}
}
