package kafkatest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// UniqueName returns a topic or group name that no other test (or run) on the
// shared clusters uses: prefix, the test's name and a random suffix. Only
// letters, digits and '-' appear; no '.', which MM2 uses as the separator in
// remote topic names. The name is also a regex that matches only itself, so
// it can go into MM2Options.Topics and Groups as it is.
func UniqueName(t testing.TB, prefix string) string {
	var b strings.Builder
	for _, r := range prefix + "-" + t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := b.String()
	if len(name) > 80 {
		name = name[:80]
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	return name + "-" + hex.EncodeToString(suffix[:])
}
