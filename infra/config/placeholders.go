package config

import (
	"regexp"
	"strings"
)

// Values handed out as templates by managed Connect services: UPPER_SNAKE tokens such as
// SOURCE_CLUSTER_BOOTSTRAP_ADDRESS, and ${...} references to config providers, which
// checkpointd does not run.
var (
	upperSnake  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)
	providerRef = regexp.MustCompile(`\$\{[^}]*\}`)
)

// placeholderIn returns the placeholder a value consists of or contains, if any.
func placeholderIn(value string) (string, bool) {
	v := strings.TrimSpace(value)
	if upperSnake.MatchString(v) {
		return v, true
	}
	if ref := providerRef.FindString(v); ref != "" {
		return ref, true
	}
	return "", false
}

// checkFreeTextPlaceholders looks at values that any text is valid for (names, regex
// lists, passwords): a ${...} reference cannot be resolved and is a problem; an
// UPPER_SNAKE value might be meant, so it is a warning. Placeholders in typed values
// are reported when the value fails validation.
func checkFreeTextPlaceholders(s settings, kindOf func(string) valueKind, rep *Report) map[string]bool {
	bad := map[string]bool{}
	for _, key := range s.sortedKeys() {
		value := s[key].value
		if kindOf(key) != freeText {
			continue
		}
		if ref := providerRef.FindString(value); ref != "" {
			rep.problem(key, "", "placeholder %s was not filled in: checkpointd does not run config providers; put the value in the file, the environment (%s) or --set", ref, envName(key))
			bad[key] = true
			continue
		}
		if v := strings.TrimSpace(value); upperSnake.MatchString(v) {
			if isSecret(key) {
				rep.warn(key, value, "looks like a placeholder that was not filled in")
			} else {
				rep.warn(key, value, "looks like a placeholder (%s) that was not filled in", v)
			}
		}
	}
	return bad
}
