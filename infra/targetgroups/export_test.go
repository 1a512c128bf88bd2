package targetgroups

import (
	"time"

	"github.com/IBM/sarama"
)

// OnCommitConnOpen makes c call fn with every commit connection it opens.
func OnCommitConnOpen(c *Client, fn func(*sarama.Broker)) {
	c.commits.mu.Lock()
	defer c.commits.mu.Unlock()
	c.commits.onOpen = fn
}

// SetCommitIdleTimeout sets how long an idle commit connection of c is kept.
func SetCommitIdleTimeout(c *Client, d time.Duration) {
	c.commits.mu.Lock()
	defer c.commits.mu.Unlock()
	c.commits.idle = d
}

// FailCommitDials makes every commit connection c opens fail with err.
func FailCommitDials(c *Client, err error) {
	c.commits.mu.Lock()
	defer c.commits.mu.Unlock()
	c.commits.dial = func(string, *sarama.Config) (*sarama.Broker, error) { return nil, err }
}
