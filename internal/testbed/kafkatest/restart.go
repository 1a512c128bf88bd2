package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// StopBroker stops the cluster's broker (SIGTERM, SIGKILL after the grace
// period) and keeps its data and ports, so RestartBroker can bring the same
// cluster back. Clients see the cluster as down meanwhile. Do not call it
// concurrently with Pid, RestartBroker or the bed's Close.
func (c *Cluster) StopBroker() error {
	if c.proc == nil {
		return errors.New("stop broker: not started")
	}
	if err := c.proc.stop(brokerGrace); err != nil {
		return fmt.Errorf("stop broker %s: %w", c.Alias, err)
	}
	return nil
}

// RestartBroker starts a broker stopped by StopBroker again, on the same data
// directory, ports and cluster id, and waits until it serves metadata. Pid
// names the new JVM afterwards.
func (c *Cluster) RestartBroker(ctx context.Context) error {
	if c.proc == nil || !c.proc.exited() {
		return fmt.Errorf("restart broker %s: it is not stopped", c.Alias)
	}
	// The log already says "Kafka Server started" from the first start: only
	// what the new JVM appends counts.
	var logged int64
	if fi, err := os.Stat(c.logFile); err == nil {
		logged = fi.Size()
	}
	proc, err := startJava("kafka-"+c.Alias, c.lib, c.Dir, c.logFile, c.flags, "kafka.Kafka", c.serverProps)
	if err != nil {
		return fmt.Errorf("restart broker %s: %w", c.Alias, err)
	}
	c.proc = proc
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		if proc.exited() {
			return fmt.Errorf("restart broker %s: exited (%v)\n%s", c.Alias, proc.waitErr, proc.tail(40))
		}
		if data, err := os.ReadFile(c.logFile); err == nil && int64(len(data)) > logged &&
			strings.Contains(string(data[logged:]), "Kafka Server started") && c.metadataOK() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart broker %s: not ready: %w\n%s", c.Alias, ctx.Err(), proc.tail(40))
		case <-time.After(pollInterval):
		}
	}
}
