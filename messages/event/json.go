package event

import (
	"encoding/json"
	"fmt"
)

// Marshal encodes e as JSON: the event's fields, without its trace context
// (forwarders carry that in metadata).
func Marshal(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.Kind(), err)
	}
	return b, nil
}

// Unmarshal decodes an event of kind k that Marshal encoded. The trace
// context is not in the payload; a forwarder's metadata carries it.
func Unmarshal(k Kind, payload []byte) (Event, error) {
	var (
		e   Event
		err error
	)
	switch k {
	case KindSourceCommitRead:
		e, err = decode[SourceCommitRead](payload)
	case KindOffsetSyncApplied:
		e, err = decode[OffsetSyncApplied](payload)
	case KindCheckpointDecided:
		e, err = decode[CheckpointDecided](payload)
	case KindCheckpointWritten:
		e, err = decode[CheckpointWritten](payload)
	case KindTargetCommitResult:
		e, err = decode[TargetCommitResult](payload)
	default:
		return nil, fmt.Errorf("unknown event kind %d", k)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s event: %w", k, err)
	}
	return e, nil
}

// ParseKind is the Kind whose String is name.
func ParseKind(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

func decode[E Event](payload []byte) (E, error) {
	var e E
	err := json.Unmarshal(payload, &e)
	return e, err
}
