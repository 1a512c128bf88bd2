// Package exact translates a committed source offset to the exact target
// offset where the records prove it, and otherwise says why not.
//
// MirrorMaker 2 maps a committed offset to the last offset sync at or before
// it plus one, so a consumer that fails over re-reads the records between
// that sync and its commit. The records themselves settle where the group
// really is: MirrorSourceTask copies each record's timestamp, key, value and
// headers unchanged and in order, so the source records from the lower sync
// to the committed offset can be found again, one by one, on the target
// between the lower and the upper sync ([Locate]).
//
// The search never answers later than the true position: where records are
// identical it takes the earliest place they fit (a replay, never a skip),
// and whatever it cannot explain ends it with a [Reason]; the caller then
// keeps MM2's translation. It is pure: the records come from the caller
// (infra/recordfetch reads them from Kafka).
package exact
