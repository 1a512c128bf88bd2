package kafkaerr

import (
	"context"
	"errors"
	"strings"

	"github.com/IBM/sarama"
)

// unreachableCodes are broker answers, or sarama's own errors, that say a
// broker or the cluster could not serve the request for now: nothing about
// the request itself, the principal's rights or the topic is wrong.
var unreachableCodes = []error{
	sarama.ErrOutOfBrokers, sarama.ErrNotConnected, sarama.ErrBrokerNotAvailable,
	sarama.ErrLeaderNotAvailable, sarama.ErrNotLeaderForPartition, sarama.ErrReplicaNotAvailable,
	sarama.ErrRequestTimedOut, sarama.ErrNetworkException, sarama.ErrNotController,
	sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable,
	sarama.ErrOffsetsLoadInProgress, sarama.ErrKafkaStorageError,
	sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch,
	context.DeadlineExceeded,
}

// Unreachable reports whether err only says that the cluster, or the broker
// asked, could not be reached or could not answer for now: a refused or
// reset connection, a timeout, no broker left, a leader or coordinator
// moving, a producer's circuit breaker open after such failures. Such a
// failure is over once the cluster answers again. An authorization,
// authentication or TLS failure, or an error about the request, is not.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	switch LayerOf(err) {
	case Network:
		return true
	case TLS, SASLMechanism, Credentials, Authorization:
		return false
	}
	for _, e := range unreachableCodes {
		if errors.Is(err, e) {
			return true
		}
	}
	// Wrapped by text only: sarama's producer breaker opens after repeated
	// failures to reach the broker, and its error carries no type of ours.
	return strings.Contains(err.Error(), "circuit breaker is open")
}
