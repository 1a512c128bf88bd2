package kafkaerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/IBM/sarama"
)

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", fmt.Errorf("consume partition 0: %w", refused), true},
		{"EOF", fmt.Errorf("fetch: %w", io.EOF), true},
		{"out of brokers wrapping a refused dial", fmt.Errorf("%w: %w", sarama.ErrOutOfBrokers, refused), true},
		{"leader moving", &sarama.ConsumerError{Topic: "t", Partition: 0, Err: sarama.ErrNotLeaderForPartition}, true},
		{"coordinator moving", fmt.Errorf("commit: %w", sarama.ErrNotCoordinatorForConsumer), true},
		{"deadline", fmt.Errorf("describe: %w", context.DeadlineExceeded), true},
		{"producer breaker open", errors.New("write checkpoints: 80 of 80 records failed: circuit breaker is open"), true},
		{"topic ACL", fmt.Errorf("read: %w", sarama.ErrTopicAuthorizationFailed), false},
		{"group ACL over a network-looking wrap", fmt.Errorf("%w: %w", sarama.ErrGroupAuthorizationFailed, io.EOF), false},
		{"credentials", fmt.Errorf("connect: %w", sarama.ErrSASLAuthenticationFailed), false},
		{"unknown topic", fmt.Errorf("metadata: %w", sarama.ErrUnknownTopicOrPartition), false},
		{"anything else", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unreachable(tc.err); got != tc.want {
				t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
