package pipeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetWritesOnlyThroughPorts: the calls that write to or create on
// the target appear in targetwrites.go only, so shadow mode, which swaps
// targetWrites, leaves no write path behind in the service. apply.go is
// `translate --apply`, a command of its own whose job is to write.
func TestTargetWritesOnlyThroughPorts(t *testing.T) {
	writers := map[string]bool{
		"kafkalog.EnsureTopic": true, "kafkalog.NewCheckpointPublisher": true, "targetgroups.SyncTarget": true,
		"sarama.NewSyncProducer": true, "sarama.NewAsyncProducer": true, "sarama.NewSyncProducerFromClient": true,
		"sarama.NewAsyncProducerFromClient": true, "kafka.NewPublisher": true,
	}
	methods := map[string]bool{"CreateTopic": true, "CreatePartitions": true, "DeleteTopic": true, "DeleteRecords": true,
		"AlterConfig": true, "IncrementalAlterConfig": true, "CreateACLs": true, "DeleteConsumerGroupOffset": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			full := sel.Sel.Name
			if x, ok := sel.X.(*ast.Ident); ok {
				full = x.Name + "." + sel.Sel.Name
			}
			if !writers[full] && !methods[sel.Sel.Name] {
				return true
			}
			if name == "apply.go" {
				return true
			}
			if name == "targetwrites.go" {
				seen++
				return true
			}
			t.Errorf("%s: %s writes to the target outside targetWrites (targetwrites.go)", fset.Position(sel.Pos()), full)
			return true
		})
	}
	if seen < 3 {
		t.Errorf("found %d writing calls in targetwrites.go: the check no longer sees them", seen)
	}
}
