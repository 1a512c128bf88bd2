package targetgroups

import (
	"context"
	"errors"

	"github.com/IBM/sarama"
)

// errNoAnswer: a coordinator's response left out a group it was asked about.
var errNoAnswer = errors.New("coordinator response has no entry for the group")

// askFunc sends one request to coordinator b about groups and returns, per
// group, nil when the group is done or the error it got. A non-nil second
// result fails the whole request.
type askFunc func(b *sarama.Broker, groups []string) (map[string]error, error)

// eachCoordinator asks every group's coordinator about its groups, one
// request per coordinator, and asks again (after a backoff, with the
// coordinator looked up afresh) for the groups whose coordinator moved, was
// loading or could not be reached. It returns the groups that still failed.
func (c *Client) eachCoordinator(ctx context.Context, groups []string, ask askFunc) map[string]error {
	failed := make(map[string]error)
	todo := groups
	bo := c.retryBackoff()
	for attempt := 0; len(todo) > 0; attempt++ {
		if err := c.pause(ctx, bo, attempt); err != nil {
			for _, g := range todo {
				failed[g] = err
			}
			break
		}
		var again []string
		lastAttempt := attempt >= c.retries
		settle := func(group string, err error) {
			if !lastAttempt && retryAtCoordinator(err) {
				_ = c.client.RefreshCoordinator(group) // a failed refresh shows on the next attempt
				again = append(again, group)
				return
			}
			failed[group] = err
		}

		batches := make(map[*sarama.Broker][]string)
		for _, g := range todo {
			b, err := c.client.Coordinator(g)
			if err != nil {
				settle(g, err)
				continue
			}
			batches[b] = append(batches[b], g)
		}
		for b, gs := range batches {
			errs, err := ask(b, gs)
			for _, g := range gs {
				switch gerr, ok := errs[g]; {
				case err != nil:
					settle(g, err)
				case !ok:
					settle(g, errNoAnswer)
				case gerr != nil:
					settle(g, gerr)
				}
			}
		}
		todo = again
	}
	return failed
}
