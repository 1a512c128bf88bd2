package targetgroups

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func TestCommitReason(t *testing.T) {
	tests := []struct {
		kerr sarama.KError
		want targetgroup.Reason
	}{
		{sarama.ErrNoError, targetgroup.Committed},
		{sarama.ErrUnknownMemberId, targetgroup.ActiveOnTarget},
		{errStaleMemberEpoch, targetgroup.ActiveOnTarget},
		{sarama.ErrUnsupportedVersion, targetgroup.ActiveOnTarget}, // kfake's answer for an active KIP-848 group
		{sarama.ErrNotCoordinatorForConsumer, targetgroup.Retriable},
		{sarama.ErrConsumerCoordinatorNotAvailable, targetgroup.Retriable},
		{sarama.ErrOffsetsLoadInProgress, targetgroup.Retriable},
		{sarama.ErrRebalanceInProgress, targetgroup.Retriable},
		{sarama.ErrUnknownTopicOrPartition, targetgroup.TargetTopicMissing},
		{sarama.ErrTopicAuthorizationFailed, targetgroup.Unauthorized},
		{sarama.ErrGroupAuthorizationFailed, targetgroup.Unauthorized},
		{sarama.ErrOffsetMetadataTooLarge, targetgroup.MetadataTooLarge},
		{sarama.ErrInvalidCommitOffsetSize, targetgroup.CommitFailed},
		{sarama.ErrGroupIDNotFound, targetgroup.CommitFailed}, // a share group
	}
	for _, tc := range tests {
		if got := commitReason(tc.kerr); got != tc.want {
			t.Errorf("commitReason(%d %v) = %s, want %s", int16(tc.kerr), tc.kerr, got, tc.want)
		}
	}
}

func TestRetryAtCoordinator(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{sarama.ErrNotCoordinatorForConsumer, true},
		{fmt.Errorf("wrapped: %w", sarama.ErrConsumerCoordinatorNotAvailable), true},
		{sarama.ErrOffsetsLoadInProgress, true},
		{io.EOF, true},
		{sarama.ErrNotConnected, true},
		{sarama.ErrUnknownMemberId, false},
		{sarama.ErrGroupAuthorizationFailed, false},
		{sarama.ErrClosedClient, false},
		{sarama.ConfigurationError("bad"), false},
	}
	for _, tc := range tests {
		if got := retryAtCoordinator(tc.err); got != tc.want {
			t.Errorf("retryAtCoordinator(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestPartitionResultNamesTheMissingACL(t *testing.T) {
	tp := orders(3)
	group := partitionResult("payments", tp, sarama.ErrGroupAuthorizationFailed)
	if group.Reason != targetgroup.Unauthorized || !errors.Is(group.Err, sarama.ErrGroupAuthorizationFailed) {
		t.Fatalf("group auth: %+v", group)
	}
	if want := `(authorization: READ on group "payments" is needed)`; !contains(group.Err.Error(), want) {
		t.Errorf("group auth error %q does not say %q", group.Err, want)
	}
	topic := partitionResult("payments", tp, sarama.ErrTopicAuthorizationFailed)
	if want := `(authorization: READ on topic "src.orders" is needed)`; !contains(topic.Err.Error(), want) {
		t.Errorf("topic auth error %q does not say %q", topic.Err, want)
	}
	if ok := partitionResult("payments", tp, sarama.ErrNoError); ok.Reason != targetgroup.Committed || ok.Err != nil {
		t.Errorf("no error: %+v", ok)
	}
}
