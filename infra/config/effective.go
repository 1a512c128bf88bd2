package config

// KeyValue is one property of the effective configuration.
type KeyValue struct {
	Key, Value string
}

// Redacted is printed instead of a secret's value.
const Redacted = "[redacted]"

// Effective lists every property as given after overrides, sorted, with
// secrets redacted.
func (c *Config) Effective() []KeyValue {
	out := make([]KeyValue, 0, len(c.Raw))
	for _, k := range sortedKeys(c.Raw) {
		v := c.Raw[k]
		if isSecret(k) {
			v = Redacted
		}
		out = append(out, KeyValue{k, v})
	}
	return out
}
