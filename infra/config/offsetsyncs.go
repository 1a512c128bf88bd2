package config

// OffsetSyncsLocation is where the offset syncs this connector reads are.
type OffsetSyncsLocation struct {
	Topic    string        // MM2's name for it, after the cluster that does not hold it
	OnTarget bool          // offset-syncs.topic.location=target
	Alias    string        // the alias of the cluster that holds it
	Cluster  ClusterConfig // that cluster
	Reader   Role          // the client role that reads it: that cluster's consumer
}

// OffsetSyncs resolves offset-syncs.topic.location as MM2 does: the source
// cluster holds the topic unless it is "target", and MirrorSourceConnector
// names the topic after the other cluster of the pair.
func (c *Config) OffsetSyncs() OffsetSyncsLocation {
	if c.OffsetSyncsTopicLocation == "target" {
		return OffsetSyncsLocation{Topic: c.Policy.OffsetSyncsTopic(c.SourceAlias), OnTarget: true,
			Alias: c.TargetAlias, Cluster: c.Target, Reader: TargetConsumer}
	}
	return OffsetSyncsLocation{Topic: c.Policy.OffsetSyncsTopic(c.TargetAlias),
		Alias: c.SourceAlias, Cluster: c.Source, Reader: SourceConsumer}
}
