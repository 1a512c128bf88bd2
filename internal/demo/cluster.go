package demo

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

// cluster is one embedded Kafka-protocol cluster and the demo's clients of it.
type cluster struct {
	alias   string
	fake    *kfake.Cluster
	brokers []string
	client  sarama.Client       // for metadata and end offsets
	admin   sarama.ClusterAdmin // has its own client: closing an admin closes its client
}

// startCluster starts a one-broker kfake cluster on a random loopback port.
func startCluster(alias string) (*cluster, error) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("checkpointd-demo-"+alias))
	if err != nil {
		return nil, fmt.Errorf("start %s cluster: %w", alias, err)
	}
	c := &cluster{alias: alias, fake: fake, brokers: fake.ListenAddrs()}
	if c.client, err = c.newClient(); err != nil {
		c.close()
		return nil, err
	}
	if c.admin, err = sarama.NewClusterAdmin(c.brokers, clientConfig()); err != nil {
		c.close()
		return nil, fmt.Errorf("admin of %s cluster at %v: %w", alias, c.brokers, err)
	}
	return c, nil
}

// newClient connects a client of its own for one part of the demo: sarama
// serializes the requests on a client's connection, so a consumer's waiting
// fetch would otherwise hold up a producer sharing it.
func (c *cluster) newClient() (sarama.Client, error) {
	client, err := sarama.NewClient(c.brokers, clientConfig())
	if err != nil {
		return nil, fmt.Errorf("connect to %s cluster at %v: %w", c.alias, c.brokers, err)
	}
	return client, nil
}

// createTopic creates a topic and waits until its partitions have leaders.
func (c *cluster) createTopic(name string, partitions int32, configs map[string]string) error {
	entries := make(map[string]*string, len(configs))
	for k, v := range configs {
		entries[k] = &v
	}
	detail := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}
	if err := c.admin.CreateTopic(name, detail, false); err != nil {
		return fmt.Errorf("create topic %s on %s cluster: %w", name, c.alias, err)
	}
	for range 50 {
		if err := c.client.RefreshMetadata(name); err == nil {
			if ids, err := c.client.Partitions(name); err == nil && len(ids) == int(partitions) {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("topic %s on %s cluster: partitions have no leaders after 5s", name, c.alias)
}

// close closes the clients and stops the cluster.
func (c *cluster) close() error {
	var errs []error
	if c.admin != nil {
		errs = append(errs, c.admin.Close())
	}
	if c.client != nil {
		errs = append(errs, c.client.Close())
	}
	c.fake.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s cluster clients: %w", c.alias, err)
	}
	return nil
}

// clientConfig is the sarama config of the demo's own clients (not
// checkpointd's, which come from its configuration).
func clientConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "checkpointd-demo"
	cfg.Version = sarama.V4_0_0_0
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// One request in flight per broker keeps the mirror's writes in source order.
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Fetch.Default = 1 << 20
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}
