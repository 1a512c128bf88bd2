package adminpoll

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaproto"
	"github.com/checkpointd/checkpointd/messages"
)

// errNoAnswer: the coordinator's response left out a group it was asked about.
var errNoAnswer = errors.New("offset fetch response has no entry for the group")

// poller reads groups and their offsets from the source cluster.
type poller struct {
	client    sarama.Client
	admin     sarama.ClusterAdmin
	groups    GroupFilter
	batchSize int
	// noBatch is set once the cluster turned out not to take multi-group
	// OffsetFetch (v8, Kafka 3.0+); groups are then fetched one by one.
	noBatch bool
}

// poll lists the groups and fetches the offsets of those the filter and
// keep (nil: all) select.
func (p *poller) poll(ctx context.Context, keep func(string) bool) (pollResult, error) {
	groups, listErr := p.listGroups()
	if keep != nil {
		groups = slices.DeleteFunc(groups, func(g string) bool { return !keep(g) })
	}
	res := pollResult{
		offsets:  make(map[string]groupOffsets, len(groups)),
		failed:   make(map[string]error),
		complete: listErr == nil,
	}
	for batch := range slices.Chunk(groups, p.batchSize) {
		if err := ctx.Err(); err != nil {
			for _, g := range batch {
				res.failed[g] = err
			}
			continue
		}
		p.fetch(batch, res)
	}
	return res, listErr
}

// listGroups asks every broker for its groups, as Kafka's Admin does, and
// keeps the consumer groups the filter selects, sorted. Protocol type
// "consumer" covers classic and KIP-848 consumer groups; "" covers groups
// that only hold commits. Connect workers, share and streams groups are left
// out. The error names the brokers that did not answer; the groups of those
// that did are returned.
func (p *poller) listGroups() ([]string, error) {
	conf := p.client.Config()
	brokers := p.client.Brokers()
	if len(brokers) == 0 {
		return nil, errors.New("list groups: no brokers known")
	}
	answers := make([]map[string]string, len(brokers))
	errs := make([]error, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Go(func() {
			if err := b.Open(conf); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
				errs[i] = fmt.Errorf("list groups on broker %d: %w", b.ID(), err)
				return
			}
			resp, err := b.ListGroups(&sarama.ListGroupsRequest{Version: kafkaproto.ListGroups(conf.Version)})
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("list groups on broker %d: %w", b.ID(), err)
			case resp.Err != sarama.ErrNoError:
				errs[i] = fmt.Errorf("list groups on broker %d: %w", b.ID(), resp.Err)
			default:
				answers[i] = resp.Groups
			}
		})
	}
	wg.Wait()
	var groups []string
	for _, answer := range answers {
		for g, protocolType := range answer {
			if (protocolType == "consumer" || protocolType == "") && (p.groups == nil || p.groups.Match(g)) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	return slices.Compact(groups), errors.Join(errs...)
}

// fetch reads the committed offsets of a batch of groups into res. If the
// batched request fails as a whole, the groups are fetched one by one, so
// one bad group does not hide the others.
func (p *poller) fetch(groups []string, res pollResult) {
	if !p.noBatch {
		req := make(map[string]map[string][]int32, len(groups))
		for _, g := range groups {
			req[g] = nil // nil: every partition the group has committed
		}
		answers, err := p.admin.ListConsumerGroupOffsetsBatch(req)
		if err == nil {
			for _, g := range groups {
				a, ok := answers[g]
				if !ok {
					res.failed[g] = errNoAnswer
					continue
				}
				p.settle(res, g, a.Err, a.Blocks)
			}
			return
		}
		if errors.Is(err, sarama.ErrUnsupportedVersion) {
			p.noBatch = true
		}
	}
	for _, g := range groups {
		resp, err := p.admin.ListConsumerGroupOffsets(g, nil)
		switch {
		case errors.Is(err, sarama.ErrGroupIDNotFound):
			res.offsets[g] = groupOffsets{}
		case err != nil:
			res.failed[g] = err
		case resp.Version >= 8:
			a := resp.GetGroup(g)
			if a == nil {
				res.failed[g] = errNoAnswer
				continue
			}
			p.settle(res, g, a.Err, a.Blocks)
		default:
			p.settle(res, g, resp.Err, resp.Blocks)
		}
	}
}

// settle files one group's OffsetFetch answer into res. A group that does
// not exist (kfake says GROUP_ID_NOT_FOUND, Kafka returns no offsets) has
// no offsets; any error in the group or one of its partitions fails the
// whole group for this poll.
func (p *poller) settle(res pollResult, group string, gerr sarama.KError, blocks map[string]map[int32]*sarama.OffsetFetchResponseBlock) {
	switch gerr {
	case sarama.ErrNoError:
	case sarama.ErrGroupIDNotFound:
		res.offsets[group] = groupOffsets{}
		return
	default:
		res.failed[group] = gerr
		return
	}
	offsets := make(groupOffsets)
	for topic, parts := range blocks {
		for partition, b := range parts {
			tp := messages.TopicPartition{Topic: topic, Partition: partition}
			if b.Err != sarama.ErrNoError {
				res.failed[group] = fmt.Errorf("%s: %w", tp, b.Err)
				return
			}
			if b.Offset >= 0 { // -1: no commit
				offsets[tp] = commit{Offset: b.Offset, LeaderEpoch: b.LeaderEpoch, Metadata: b.Metadata}
			}
		}
	}
	res.offsets[group] = offsets
}
