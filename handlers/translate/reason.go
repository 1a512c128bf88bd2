package translate

import "github.com/checkpointd/checkpointd/messages"

// Reason says why no checkpoint was produced: messages.SkipReason, named
// here for the rules that produce it.
type Reason = messages.SkipReason

const (
	ReasonNone             = messages.SkipNone
	ReasonNoSyncYet        = messages.SkipNoSyncYet
	ReasonBehindOldestSync = messages.SkipBehindOldestSync
	ReasonFilteredTopic    = messages.SkipFilteredTopic
	ReasonNoCommit         = messages.SkipNoCommit
	ReasonNotNewer         = messages.SkipNotNewer
	ReasonGateClosed       = messages.SkipGateClosed
	ReasonVetoed           = messages.SkipVetoed
)
