package kafkalog

import (
	"errors"
	"testing"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// The producer's failed records map back to the messages they came from,
// once each; a record that is not one of ours means all of them.
func TestUnwritten(t *testing.T) {
	msgs := []*message.Message{message.NewMessage("a", nil), message.NewMessage("b", nil), message.NewMessage("c", nil)}
	records := []*sarama.ProducerMessage{{}, {}, {}}
	fail := func(rs ...*sarama.ProducerMessage) sarama.ProducerErrors {
		var out sarama.ProducerErrors
		for _, r := range rs {
			out = append(out, &sarama.ProducerError{Msg: r, Err: errors.New("circuit breaker is open")})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		perrs sarama.ProducerErrors
		want  []string
	}{
		{"one", fail(records[1]), []string{"b"}},
		{"two, one twice", fail(records[2], records[0], records[2]), []string{"c", "a"}},
		{"a stranger", fail(records[0], &sarama.ProducerMessage{}), []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unwritten(msgs, records, tc.perrs)
			var ids []string
			for _, m := range got {
				ids = append(ids, m.UUID)
			}
			if len(ids) != len(tc.want) {
				t.Fatalf("unwritten = %v, want %v", ids, tc.want)
			}
			for i := range ids {
				if ids[i] != tc.want[i] {
					t.Fatalf("unwritten = %v, want %v", ids, tc.want)
				}
			}
		})
	}
	var pw interface{ Unwritten() []*message.Message }
	err := error(&PartialWriteError{err: errors.New("x"), unwritten: msgs[:1]})
	if !errors.As(err, &pw) || len(pw.Unwritten()) != 1 {
		t.Error("PartialWriteError does not say what was unwritten")
	}
}
