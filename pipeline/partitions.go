package pipeline

import (
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
)

// sourcePartitionCounts tells the index stage how many partitions the
// source topics have, so that an offset sync for a partition its topic does
// not have is skipped. It answers from a metadata cache of a client of its
// own (one request per topic, then again only for a partition past the
// count), never creates a topic, and gives up quickly on a cluster that
// does not answer: the sync is then applied unchecked.
func (p *Pipeline) sourcePartitionCounts() (*kafkalog.PartitionCounts, error) {
	cfg, err := p.cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		return nil, fmt.Errorf("source admin client config: %w", err)
	}
	cfg = probeConfig(cfg)
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Metadata.Full = false
	counts := kafkalog.NewPartitionCounts(func() (sarama.Client, error) {
		return kafkalog.NewClient(p.cfg.Source.BootstrapServers, cfg)
	}, p.logger)
	p.closers = append(p.closers, counts.Close)
	return counts, nil
}
