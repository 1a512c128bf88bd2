package kafkalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
)

// NewClient is sarama.NewClient with an error an operator can act on. When
// sarama gives up with only "run out of available brokers", each bootstrap
// broker is dialled once more, alone, and what went wrong with each (refused,
// TLS, a SASL handshake the listener does not speak, bad credentials) is added
// to the error. errors.Is still finds sarama.ErrOutOfBrokers.
func NewClient(brokers []string, cfg *sarama.Config) (sarama.Client, error) {
	client, err := sarama.NewClient(brokers, cfg)
	if err == nil || !errors.Is(err, sarama.ErrOutOfBrokers) {
		return client, err
	}
	return nil, &dialError{err: err, brokers: diagnose(brokers, cfg)}
}

// NewClusterAdmin is sarama.NewClusterAdmin on a client from NewClient.
func NewClusterAdmin(brokers []string, cfg *sarama.Config) (sarama.ClusterAdmin, error) {
	client, err := NewClient(brokers, cfg)
	if err != nil {
		return nil, err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	return admin, nil
}

// dialError is sarama's error with the outcome of dialling each broker.
type dialError struct {
	err     error
	brokers []string
}

func (e *dialError) Error() string {
	if len(e.brokers) == 0 {
		return e.err.Error()
	}
	return e.err.Error() + ": " + strings.Join(e.brokers, "; ")
}

func (e *dialError) Unwrap() error { return e.err }

// diagnose dials each broker with cfg and describes every failure. A broker
// that connects and answers a metadata request is left out: the failure was
// elsewhere (or passing).
func diagnose(brokers []string, cfg *sarama.Config) []string {
	var out []string
	for _, addr := range brokers {
		if err := dialOnce(addr, cfg); err != nil {
			out = append(out, fmt.Sprintf("broker %s: %v", addr, describeDialError(err, cfg)))
		}
	}
	return out
}

func dialOnce(addr string, cfg *sarama.Config) error {
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	if ok, err := b.Connected(); !ok || err != nil {
		if err == nil {
			err = errors.New("not connected")
		}
		return err
	}
	_, err := b.GetMetadata(&sarama.MetadataRequest{Version: 1})
	return err
}

// describeDialError is err with what to check, named by its layer
// (network, TLS, SASL mechanism, credentials, authorization): TLS is told
// before SASL, so an untrusted certificate under SASL_SSL is not blamed on
// SASL.
func describeDialError(err error, cfg *sarama.Config) string {
	return kafkaerr.Describe(err, cfg)
}
