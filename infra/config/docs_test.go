package config

import (
	"os"
	"strings"
	"testing"
)

// TestEveryKeyDocumented keeps docs/configuration.md in step with the keys checkpointd
// reads.
func TestEveryKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, s := range connectorKeys {
		if !strings.Contains(text, "`"+s.name+"`") {
			t.Errorf("connector key %s is not in docs/configuration.md", s.name)
		}
	}
	for name := range clientKeys {
		if !strings.Contains(text, "`"+name+"`") {
			t.Errorf("client property %s is not in docs/configuration.md", name)
		}
	}
}
