package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/checkpointd/checkpointd/messages"
)

// writeSetup tells the reader what is about to run.
func writeSetup(w io.Writer, scene scenario, source, target *cluster, policy messages.ReplicationPolicy, props map[string]string) error {
	var b strings.Builder
	b.WriteString("checkpointd demo: two embedded Kafka-protocol clusters (kfake) in this process\n")
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-12s %s\n", label, fmt.Sprintf(format, args...))
	}
	line("source", "%s", strings.Join(source.brokers, ","))
	line("target", "%s", strings.Join(target.brokers, ","))
	for _, t := range scene.topics {
		text := fmt.Sprintf("%-9s %d partitions, %.0f-%.0f records/s each, mirrored to %s",
			t.name, t.partitions, t.rateOf(0), t.rateOf(t.partitions-1), policy.FormatRemoteTopic(source.alias, t.name))
		if t.filterEvery > 0 {
			text += fmt.Sprintf("; the mirror drops every %s record (a filter SMT: upstream gaps)", ordinal(t.filterEvery))
		}
		line("topic", "%s", text)
	}
	line("mirror", "MM2-style offset syncs: offset.lag.max=%d, delayed syncs flushed every %v", offsetLagMax, syncFlushInterval)
	for _, g := range scene.groups {
		line("group", "%-9s %s: %s", g.name, strings.Join(g.topics, "+"), g.behaviour())
	}
	line("checkpointd", "source commits read by %s every %sms, sync.group.offsets.interval.seconds=%s",
		props["checkpointd.commit.source"], props["checkpointd.admin.poll.interval.ms"], props["sync.group.offsets.interval.seconds"])
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// behaviour says how a group commits, for people.
func (g groupSpec) behaviour() string {
	how := "keeps up"
	if g.pace < 1 {
		how = fmt.Sprintf("reads at %.0f%% speed", g.pace*100)
	}
	how += fmt.Sprintf(", commits every %v", g.commitEvery)
	if g.stopAt > 0 {
		how += fmt.Sprintf(", stops %.0f%% into the run", g.stopAt*100)
	}
	return how
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
