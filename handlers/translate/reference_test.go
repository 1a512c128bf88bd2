package translate

// refStore is a line-by-line port of MM2's OffsetSyncStore for one partition,
// keeping the 64 slots as pointers so "same sync" is pointer identity exactly
// as in Java. Tests use it as the oracle for the compact history.
type refStore struct {
	keepStartup bool // MM2's !mustReadToEnd
	readToEnd   bool
	syncs       *[slots]*Sync
}

func (st *refStore) apply(u, d int64) {
	x := &Sync{Upstream: u, Downstream: d}
	if st.syncs == nil {
		st.syncs = new([slots]*Sync)
		for i := range st.syncs {
			st.syncs[i] = x
		}
		return
	}
	orig := st.syncs
	s := *orig
	if (!st.readToEnd && !st.keepStartup) || u < s[0].Upstream {
		for i := range s {
			s[i] = x
		}
		st.syncs = &s
		return
	}
	replacement := x
	replacementIndex := 0
	s[0] = replacement
	for current := 1; current < slots; current++ {
		previous := current - 1
		for {
			oldValue := orig[replacementIndex]
			isRecent := refInvariantB(s[previous], oldValue, previous, current)
			separatedFromPrevious := refInvariantC(s[previous], oldValue, previous)
			next := current + 1
			separatedFromNext := next >= slots || refInvariantC(oldValue, s[next], current)
			nextReplacement := replacementIndex + 1
			duplicate := nextReplacement < slots && oldValue == orig[nextReplacement]
			promote := isRecent && separatedFromPrevious && separatedFromNext
			if promote {
				replacement = oldValue
			}
			skip := duplicate || !separatedFromPrevious
			if promote || skip {
				replacementIndex++
			}
			if !(replacementIndex < current && skip) {
				break
			}
		}
		if refInvariantB(s[previous], s[current], previous, current) {
			break
		}
		s[current] = replacement
	}
	st.syncs = &s
}

func refInvariantB(i, j *Sync, ii, jj int) bool {
	bound := j.Upstream + (int64(1) << jj) - (int64(1) << ii)
	return i == j || bound < 0 || i.Upstream <= bound
}

func refInvariantC(i, j *Sync, ii int) bool {
	bound := j.Upstream + (int64(1) << max(ii-2, 0))
	return i == j || (bound >= 0 && i.Upstream >= bound)
}

// translate is MM2's translateDownstream for a started store with a sync.
func (st *refStore) translate(g int64) (int64, bool) {
	s := st.syncs[slots-1]
	for _, c := range st.syncs {
		if c.Upstream <= g {
			s = c
			break
		}
	}
	if s.Upstream > g {
		return -1, true
	}
	if s.Upstream == g {
		return s.Downstream, true
	}
	return s.Downstream + 1, true
}

// distinct lists the stored syncs run by run, like MM2's countDistinctStoredSyncs.
func (st *refStore) distinct() []Sync {
	out := []Sync{*st.syncs[0]}
	for i := 1; i < slots; i++ {
		if st.syncs[i] != st.syncs[i-1] {
			out = append(out, *st.syncs[i])
		}
	}
	return out
}

// slotUpstreams returns the upstream offset held in each slot.
func (st *refStore) slotUpstreams() [slots]int64 {
	var out [slots]int64
	for i, s := range st.syncs {
		out[i] = s.Upstream
	}
	return out
}
