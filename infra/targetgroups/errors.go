package targetgroups

import (
	"context"
	"errors"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// errStaleMemberEpoch is STALE_MEMBER_EPOCH (113), which sarama does not name:
// a KIP-848 group rejecting a commit that does not come from a current member.
const errStaleMemberEpoch sarama.KError = 113

// retryAtCoordinator reports errors after which the request is worth sending
// again, to the group's coordinator looked up afresh: the coordinator moved,
// is loading, or the connection broke.
func retryAtCoordinator(err error) bool {
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		switch kerr {
		case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable,
			sarama.ErrOffsetsLoadInProgress, sarama.ErrRequestTimedOut, sarama.ErrNetworkException:
			return true
		}
		return false
	}
	var cfgErr sarama.ConfigurationError
	var encErr sarama.PacketEncodingError
	switch {
	case err == nil, errors.As(err, &cfgErr), errors.As(err, &encErr),
		errors.Is(err, sarama.ErrClosedClient),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true // a transport error: EOF, refused, broker not connected, ...
}

// commitReason classifies a per-partition OffsetCommit error.
func commitReason(kerr sarama.KError) targetgroup.Reason {
	switch kerr {
	case sarama.ErrNoError:
		return targetgroup.Committed
	case sarama.ErrUnknownMemberId, sarama.ErrIllegalGeneration, sarama.ErrFencedInstancedId,
		errStaleMemberEpoch,
		// kfake answers a simple commit to an active KIP-848 group with
		// UNSUPPORTED_VERSION where Kafka says UNKNOWN_MEMBER_ID. A real
		// version mismatch never gets here: sarama refuses it before sending.
		sarama.ErrUnsupportedVersion:
		return targetgroup.ActiveOnTarget
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable,
		sarama.ErrOffsetsLoadInProgress, sarama.ErrRebalanceInProgress,
		sarama.ErrRequestTimedOut, sarama.ErrNetworkException, sarama.ErrNotEnoughReplicas,
		sarama.ErrNotEnoughReplicasAfterAppend, sarama.ErrKafkaStorageError:
		return targetgroup.Retriable
	case sarama.ErrUnknownTopicOrPartition:
		return targetgroup.TargetTopicMissing
	case sarama.ErrTopicAuthorizationFailed, sarama.ErrGroupAuthorizationFailed:
		return targetgroup.Unauthorized
	case sarama.ErrOffsetMetadataTooLarge:
		return targetgroup.MetadataTooLarge
	}
	return targetgroup.CommitFailed
}
