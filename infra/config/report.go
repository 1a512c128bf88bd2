package config

import (
	"errors"
	"fmt"
	"strings"
)

// Issue is one finding about one key: a problem stops start-up, a warning does not.
type Issue struct {
	Key     string // the property as written, e.g. source.cluster.ssl.truststore.location
	Value   string // as given, or Redacted for secrets; empty when the key is missing
	Message string // what is wrong and what is allowed
}

func (i Issue) String() string {
	switch {
	case i.Key == "":
		return i.Message
	case i.Value == "":
		return i.Key + ": " + i.Message
	default:
		return fmt.Sprintf("%s=%q: %s", i.Key, i.Value, i.Message)
	}
}

// Report lists everything Load found. It is complete: validation goes on past the
// first problem so that one run shows them all.
type Report struct {
	Warnings []Issue
	Problems []Issue
}

// Err joins the problems into one error, or returns nil.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	lines := make([]string, len(r.Problems))
	for i, p := range r.Problems {
		lines[i] = p.String()
	}
	return &InvalidError{Problems: r.Problems, msg: "invalid configuration:\n  " + strings.Join(lines, "\n  ")}
}

// InvalidError is the error Load returns when the configuration has problems.
type InvalidError struct {
	Problems []Issue
	msg      string
}

func (e *InvalidError) Error() string { return e.msg }

// IsInvalid reports whether err is, or wraps, an *InvalidError.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

func (r *Report) problem(key, value, format string, args ...any) {
	r.Problems = append(r.Problems, newIssue(key, value, format, args...))
}

func (r *Report) warn(key, value, format string, args ...any) {
	r.Warnings = append(r.Warnings, newIssue(key, value, format, args...))
}

func newIssue(key, value, format string, args ...any) Issue {
	if isSecret(key) && value != "" {
		value = Redacted
	}
	return Issue{Key: key, Value: value, Message: fmt.Sprintf(format, args...)}
}

// hasProblem reports whether a problem was already recorded for key, so that a value
// checked twice (by its key and by a client built from it) is reported once.
func (r *Report) hasProblem(key string) bool {
	for _, p := range r.Problems {
		if p.Key == key {
			return true
		}
	}
	return false
}
