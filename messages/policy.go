package messages

import "strings"

// ReplicationPolicy names topics the way MirrorMaker 2's ReplicationPolicy does: remote
// topics on the target ("us-west.orders"), where a remote topic came from, and the names
// of MM2's internal topics.
//
// Where Java returns null ("not a remote topic"), these methods return "". A remote topic
// whose source alias is itself empty (".a" under DefaultReplicationPolicy) also gives an
// empty TopicSource; its UpstreamTopic is not empty, which tells the two apart.
type ReplicationPolicy interface {
	// FormatRemoteTopic is the name topic gets on a cluster it is replicated to from
	// sourceClusterAlias.
	FormatRemoteTopic(sourceClusterAlias, topic string) string
	// TopicSource is the alias of the cluster a remote topic came from, or "".
	TopicSource(topic string) string
	// UpstreamTopic is the topic's name one hop upstream, or "" if it is not remote.
	UpstreamTopic(topic string) string
	// OriginalTopic follows UpstreamTopic to the first cluster the topic came from;
	// a topic that is not remote is its own original.
	OriginalTopic(topic string) string
	HeartbeatsTopic() string
	OffsetSyncsTopic(clusterAlias string) string
	CheckpointsTopic(clusterAlias string) string
	IsHeartbeatsTopic(topic string) bool
	IsCheckpointsTopic(topic string) bool
	// IsMM2InternalTopic follows Kafka 4.0 (KIP-1074): mm2…internal names and checkpoints
	// topics only, so user topics that merely end in ".internal" can be mirrored.
	IsMM2InternalTopic(topic string) bool
	IsInternalTopic(topic string) bool
}

// DefaultSeparator is replication.policy.separator's default.
const DefaultSeparator = "."

const heartbeatsTopic = "heartbeats"

// DownstreamTopic is the topic name a checkpoint carries for a group's commit on
// upstreamTopic in the flow sourceAlias->targetAlias (MM2's renameTopicPartition).
// A topic that came from the target in the first place goes home under its original name
// (loop-back: in the flow B->A, "A.orders" on B becomes "orders"); every other topic gets
// its remote name on the target ("orders" becomes "B.orders"). An empty targetAlias never
// counts as a match, because Java's equals against null is false; configuration rejects
// empty aliases anyway.
func DownstreamTopic(p ReplicationPolicy, sourceAlias, targetAlias, upstreamTopic string) string {
	if targetAlias != "" && p.TopicSource(upstreamTopic) == targetAlias {
		return p.OriginalTopic(upstreamTopic)
	}
	return p.FormatRemoteTopic(sourceAlias, upstreamTopic)
}

// DefaultReplicationPolicy is MM2's DefaultReplicationPolicy: remote topics are named
// alias + separator + topic. The zero value is the policy with its defaults.
type DefaultReplicationPolicy struct {
	// Separator is replication.policy.separator; empty means DefaultSeparator. It is
	// matched literally, as Java quotes it with Pattern.quote.
	Separator string
	// InternalTopicSeparatorDisabled is replication.policy.internal.topic.separator.enabled=false
	// (KIP-949): internal topic names keep "." whatever the Separator.
	InternalTopicSeparatorDisabled bool
}

var (
	_ ReplicationPolicy = DefaultReplicationPolicy{}
	_ ReplicationPolicy = IdentityReplicationPolicy{}
)

func (p DefaultReplicationPolicy) separator() string {
	if p.Separator == "" {
		return DefaultSeparator
	}
	return p.Separator
}

func (p DefaultReplicationPolicy) internalSeparator() string {
	if p.InternalTopicSeparatorDisabled {
		return DefaultSeparator
	}
	return p.separator()
}

func (p DefaultReplicationPolicy) internalSuffix() string {
	return p.internalSeparator() + "internal"
}

func (p DefaultReplicationPolicy) checkpointsTopicSuffix() string {
	return p.internalSeparator() + "checkpoints" + p.internalSuffix()
}

func (p DefaultReplicationPolicy) FormatRemoteTopic(sourceClusterAlias, topic string) string {
	return sourceClusterAlias + p.separator() + topic
}

// TopicSource splits topic on the separator with Java's String.split semantics (limit 0):
// trailing empty pieces are dropped, a leading empty piece is kept, and fewer than two
// pieces means the topic is not remote. So "a.b" comes from "a", "a." is not remote and
// ".a" comes from "".
func (p DefaultReplicationPolicy) TopicSource(topic string) string {
	source, _ := p.topicSource(topic)
	return source
}

func (p DefaultReplicationPolicy) topicSource(topic string) (source string, remote bool) {
	pieces := strings.Split(topic, p.separator())
	for len(pieces) > 0 && pieces[len(pieces)-1] == "" {
		pieces = pieces[:len(pieces)-1]
	}
	if len(pieces) < 2 {
		return "", false
	}
	return pieces[0], true
}

func (p DefaultReplicationPolicy) UpstreamTopic(topic string) string {
	source, remote := p.topicSource(topic)
	if !remote {
		return ""
	}
	return topic[len(source)+len(p.separator()):]
}

func (p DefaultReplicationPolicy) OriginalTopic(topic string) string {
	return originalTopic(p, topic)
}

func (p DefaultReplicationPolicy) HeartbeatsTopic() string { return heartbeatsTopic }

func (p DefaultReplicationPolicy) OffsetSyncsTopic(clusterAlias string) string {
	return "mm2-offset-syncs" + p.internalSeparator() + clusterAlias + p.internalSuffix()
}

func (p DefaultReplicationPolicy) CheckpointsTopic(clusterAlias string) string {
	return clusterAlias + p.checkpointsTopicSuffix()
}

func (p DefaultReplicationPolicy) IsHeartbeatsTopic(topic string) bool {
	return isHeartbeatsTopic(p, topic)
}

func (p DefaultReplicationPolicy) IsCheckpointsTopic(topic string) bool {
	return strings.HasSuffix(topic, p.checkpointsTopicSuffix())
}

func (p DefaultReplicationPolicy) IsMM2InternalTopic(topic string) bool {
	return strings.HasPrefix(topic, "mm2") && strings.HasSuffix(topic, p.internalSuffix()) ||
		p.IsCheckpointsTopic(topic)
}

func (p DefaultReplicationPolicy) IsInternalTopic(topic string) bool {
	return isInternalTopic(p, topic)
}

// IdentityReplicationPolicy is MM2's IdentityReplicationPolicy: remote topics keep their
// names, so cycles cannot be detected and the topology must be acyclic. Topics whose name
// ends in "heartbeats" are the exception and are named as by DefaultReplicationPolicy, so
// heartbeats still show the path they travelled.
type IdentityReplicationPolicy struct {
	// DefaultReplicationPolicy names internal topics and heartbeats.
	DefaultReplicationPolicy
	// SourceClusterAlias is what TopicSource reports for every topic other than heartbeats
	// (Java's source.cluster.alias); empty means unknown.
	SourceClusterAlias string
}

func (p IdentityReplicationPolicy) looksLikeHeartbeats(topic string) bool {
	return strings.HasSuffix(topic, p.HeartbeatsTopic())
}

func (p IdentityReplicationPolicy) FormatRemoteTopic(sourceClusterAlias, topic string) string {
	if p.looksLikeHeartbeats(topic) {
		return p.DefaultReplicationPolicy.FormatRemoteTopic(sourceClusterAlias, topic)
	}
	return topic
}

func (p IdentityReplicationPolicy) TopicSource(topic string) string {
	if p.looksLikeHeartbeats(topic) {
		return p.DefaultReplicationPolicy.TopicSource(topic)
	}
	return p.SourceClusterAlias
}

func (p IdentityReplicationPolicy) UpstreamTopic(topic string) string {
	if p.looksLikeHeartbeats(topic) {
		return p.DefaultReplicationPolicy.UpstreamTopic(topic)
	}
	return topic
}

// The methods below restate the embedded ones so that they call this type's
// UpstreamTopic, as Java's virtual dispatch does.

func (p IdentityReplicationPolicy) OriginalTopic(topic string) string {
	return originalTopic(p, topic)
}

func (p IdentityReplicationPolicy) IsHeartbeatsTopic(topic string) bool {
	return isHeartbeatsTopic(p, topic)
}

func (p IdentityReplicationPolicy) IsInternalTopic(topic string) bool {
	return isInternalTopic(p, topic)
}

// originalTopic is ReplicationPolicy.originalTopic's default: follow UpstreamTopic until it
// is empty or stops changing (the identity policy's fixed point).
func originalTopic(p ReplicationPolicy, topic string) string {
	for {
		upstream := p.UpstreamTopic(topic)
		if upstream == "" || upstream == topic {
			return topic
		}
		topic = upstream
	}
}

func isHeartbeatsTopic(p ReplicationPolicy, topic string) bool {
	return p.HeartbeatsTopic() == p.OriginalTopic(topic)
}

func isInternalTopic(p ReplicationPolicy, topic string) bool {
	return p.IsMM2InternalTopic(topic) || strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".")
}
