// Package targetgroup is the vocabulary the commit stage and the adapters
// that reach the target cluster share: a target group's state, a translated
// checkpoint to commit, why a partition was or was not committed, and the
// Groups port the adapters implement. It holds no logic beyond the one rule a
// state answers (Writable), so that adapters depend on it and not on the
// handlers that decide.
package targetgroup
