package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// StopBroker stops every node of the cluster (SIGTERM, SIGKILL after the
// grace period) and keeps their data and ports, so RestartBroker can bring
// the same cluster back. Clients see the cluster as down meanwhile. Do not
// call it concurrently with Pid, RestartBroker or the bed's Close.
func (c *Cluster) StopBroker() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Go(func() { errs[i] = c.stopNode(nd, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop broker %s: %w", c.Alias, err)
	}
	return nil
}

// RestartBroker starts every node stopped by StopBroker (or StopNode,
// KillNode) again, on the same data directories, ports, ids and cluster id,
// and waits until every node lists all of them in its metadata. Pid names
// the new JVM afterwards.
func (c *Cluster) RestartBroker(ctx context.Context) error {
	var stopped []*node
	for _, nd := range c.nodes {
		if nd.proc != nil && nd.proc.exited() {
			stopped = append(stopped, nd)
		}
	}
	if len(stopped) == 0 {
		return fmt.Errorf("restart broker %s: it is not stopped", c.Alias)
	}
	if err := c.restart(ctx, stopped...); err != nil {
		return fmt.Errorf("restart broker %s: %w", c.Alias, err)
	}
	return nil
}

// NodeIDs are the node ids of the cluster, 1 to the number of nodes: the
// broker ids clients see.
func (c *Cluster) NodeIDs() []int32 {
	ids := make([]int32, len(c.nodes))
	for i, nd := range c.nodes {
		ids[i] = nd.id
	}
	return ids
}

// NodePids are the process ids of the nodes' JVMs in node id order; a
// stopped node's is that of the JVM that ran last.
func (c *Cluster) NodePids() []int {
	var pids []int
	for _, nd := range c.nodes {
		if nd.proc != nil {
			pids = append(pids, nd.proc.pid())
		}
	}
	return pids
}

// StopNode stops the node with broker id id (SIGTERM: a controlled shutdown,
// which moves its partition leaders and coordinators to the other nodes
// first) and keeps its data and ports for RestartNode. Not for concurrent
// use with the other node methods or the bed's Close.
func (c *Cluster) StopNode(id int32) error {
	nd, err := c.node(id)
	if err == nil {
		err = c.stopNode(nd, false)
	}
	if err != nil {
		return fmt.Errorf("stop node %d of %s: %w", id, c.Alias, err)
	}
	return nil
}

// KillNode kills the node with broker id id (SIGKILL), as a crash would: its
// leaders and coordinators move only once the controller fences it, after
// broker.session.timeout.ms (9 s by default). RestartNode brings it back.
func (c *Cluster) KillNode(id int32) error {
	nd, err := c.node(id)
	if err == nil {
		err = c.stopNode(nd, true)
	}
	if err != nil {
		return fmt.Errorf("kill node %d of %s: %w", id, c.Alias, err)
	}
	return nil
}

// RestartNode starts the node with broker id id, stopped by StopNode or
// KillNode, again on the same data directory, ports and id, and waits until
// it serves metadata and every running node lists all nodes as brokers.
func (c *Cluster) RestartNode(ctx context.Context, id int32) error {
	nd, err := c.node(id)
	if err == nil {
		err = c.restart(ctx, nd)
	}
	if err != nil {
		return fmt.Errorf("restart node %d of %s: %w", id, c.Alias, err)
	}
	return nil
}

func (c *Cluster) node(id int32) (*node, error) {
	i := slices.IndexFunc(c.nodes, func(nd *node) bool { return nd.id == id })
	if i < 0 {
		return nil, fmt.Errorf("no node %d (the nodes are %v)", id, c.NodeIDs())
	}
	return c.nodes[i], nil
}

func (c *Cluster) stopNode(nd *node, kill bool) error {
	if nd.proc == nil {
		return errors.New("not started")
	}
	if !kill {
		return nd.proc.stop(brokerGrace)
	}
	return nd.proc.kill()
}

// restart starts the stopped nodes again together (a whole quorum must come
// back at once) and waits for the cluster.
func (c *Cluster) restart(ctx context.Context, nodes ...*node) error {
	logged := make([]int64, len(nodes))
	for i, nd := range nodes {
		if nd.proc == nil || !nd.proc.exited() {
			return fmt.Errorf("node %d is not stopped", nd.id)
		}
		// The log already says "Kafka Server started" from the first
		// start: only what the new JVM appends counts.
		if fi, err := os.Stat(nd.logFile); err == nil {
			logged[i] = fi.Size()
		}
	}
	for _, nd := range nodes {
		if err := nd.start(); err != nil {
			return err
		}
	}
	return c.waitNodes(ctx, nodes, logged)
}
