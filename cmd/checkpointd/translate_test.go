package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// TestTranslateFlags: combinations that mean nothing are refused before any
// connection, with an error naming the flags.
func TestTranslateFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--apply"}, "--apply needs the groups"},
		{[]string{"--execute", "--group", "g"}, "--execute and --dry-run go with --apply"},
		{[]string{"--dry-run", "--group", "g"}, "--execute and --dry-run go with --apply"},
		{[]string{"--apply", "--execute", "--dry-run", "--group", "g"}, "--execute and --dry-run exclude each other"},
		{[]string{"--apply", "--explain", "--group", "g"}, "--apply and --explain exclude each other"},
		{[]string{"--all-groups", "--group", "g"}, "--all-groups and --group exclude each other"},
		{[]string{"--format", "csv", "--apply", "--group", "g"}, "--format csv"},
		{[]string{"--format", "csv", "--explain"}, "--format csv"},
		{[]string{"--format", "xml"}, "want table, json or csv"},
		{[]string{"--group", "g", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// No --config: a valid combination would fail on that instead.
			err := runTranslate(context.Background(), tt.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestResetPlanCSV: the columns of ConsumerGroupCommand's CsvRecordNoGroup
// (topic,partition,offset) for one group, CsvRecordWithGroup
// (group,topic,partition,offset) for several, no header, and a group id that
// needs quoting comes back whole.
func TestResetPlanCSV(t *testing.T) {
	cps := []messages.Checkpoint{
		{Group: "a,b", TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: 0}, DownstreamOffset: 21},
		{Group: "c", TopicPartition: messages.TopicPartition{Topic: "src.orders", Partition: 11}, DownstreamOffset: 0},
	}
	tests := []struct {
		name   string
		single bool
		want   string
	}{
		{"one group", true, "src.orders,0,21\nsrc.orders,11,0\n"},
		{"several groups", false, "\"a,b\",src.orders,0,21\nc,src.orders,11,0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printResetPlanCSV(&out, cps, tt.single); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("csv %q, want %q", out.String(), tt.want)
			}
			recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
			if err != nil || (!tt.single && recs[0][0] != "a,b") {
				t.Errorf("csv does not read back: %v %v", recs, err)
			}
		})
	}
}
