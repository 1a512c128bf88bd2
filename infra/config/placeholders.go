package config

import (
	"regexp"
	"strings"
)

// Values handed out as templates by managed Connect services: UPPER_SNAKE tokens such as
// SOURCE_CLUSTER_BOOTSTRAP_ADDRESS, and ${...} left in a value after config providers ran
// (a reference without a provider, such as ${PASSWORD}, which Kafka leaves as it is too).
var (
	upperSnake  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)
	templateRef = regexp.MustCompile(`\$\{[^}]*\}`)
)

// placeholderIn returns the placeholder a value consists of or contains, if any.
func placeholderIn(value string) (string, bool) {
	v := strings.TrimSpace(value)
	if upperSnake.MatchString(v) {
		return v, true
	}
	if ref := templateRef.FindString(v); ref != "" {
		return ref, true
	}
	return "", false
}

// checkFreeTextPlaceholders looks at values that any text is valid for (names, regex
// lists, passwords): a ${...} template left after config providers ran is a problem; an
// UPPER_SNAKE value might be meant, so it is a warning. Placeholders in typed values
// are reported when the value fails validation. Keys in skip were reported already; the
// keys reported here are returned with them. Values from config providers are taken as
// they are, as Kafka takes them.
func checkFreeTextPlaceholders(s settings, kindOf func(string) valueKind, rep *Report, skip map[string]bool, provided resolved) map[string]bool {
	bad := map[string]bool{}
	for k := range skip {
		bad[k] = true
	}
	for _, key := range s.sortedKeys() {
		value := s[key].value
		if _, fromProvider := provided[key]; kindOf(key) != freeText || bad[key] || fromProvider || isProviderKey(key) {
			continue
		}
		if ref := templateRef.FindString(value); ref != "" {
			rep.problem(key, "", "placeholder %s was not filled in: put the value in the file, the environment (%s) or --set, or reference a config provider as ${provider:[path:]key}", ref, envName(key))
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
