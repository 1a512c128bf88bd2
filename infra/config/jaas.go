package config

import (
	"errors"
	"fmt"
	"strings"
)

// jaasEntry is one login module of a sasl.jaas.config value, e.g.
// org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
type jaasEntry struct {
	module  string
	flag    string
	options map[string]string
}

// parseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does with Java's
// StreamTokenizer: words, "double" or 'single' quoted strings with backslash escapes,
// key=value options, ";" ending each entry, // and /* */ comments. Kafka's clients
// take exactly one entry.
func parseJAAS(s string) (jaasEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasEntry{}, err
	}
	var entries []jaasEntry
	for len(toks) > 0 {
		if toks[0].kind != tokWord {
			return jaasEntry{}, errors.New("a login module class name must come first")
		}
		e := jaasEntry{module: toks[0].text, options: map[string]string{}}
		if len(toks) < 2 || toks[1].kind != tokWord {
			return jaasEntry{}, errors.New("login module control flag not given (want required, requisite, sufficient or optional)")
		}
		e.flag = strings.ToLower(toks[1].text)
		switch e.flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return jaasEntry{}, fmt.Errorf("invalid login module control flag %q (want required, requisite, sufficient or optional)", toks[1].text)
		}
		toks = toks[2:]
		for len(toks) > 0 && toks[0].kind != tokSemicolon {
			if len(toks) < 3 || toks[0].kind == tokEquals || toks[1].kind != tokEquals || toks[2].kind != tokWord && toks[2].kind != tokQuoted {
				return jaasEntry{}, fmt.Errorf("value not given for option %q", toks[0].text)
			}
			e.options[toks[0].text] = toks[2].text
			toks = toks[3:]
		}
		if len(toks) == 0 {
			return jaasEntry{}, errors.New("the entry does not end with a semicolon")
		}
		toks = toks[1:]
		entries = append(entries, e)
	}
	if len(entries) != 1 {
		return jaasEntry{}, fmt.Errorf("it holds %d login modules; a Kafka client takes exactly 1", len(entries))
	}
	return entries[0], nil
}

type tokKind int

const (
	tokWord tokKind = iota
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind tokKind
	text string
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	rs := []rune(s)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case c <= ' ':
			i++
		case c == '/' && i+1 < len(rs) && rs[i+1] == '/':
			for i < len(rs) && rs[i] != '\n' && rs[i] != '\r' {
				i++
			}
		case c == '/' && i+1 < len(rs) && rs[i+1] == '*':
			end := strings.Index(string(rs[i+2:]), "*/")
			if end < 0 {
				return nil, errors.New("unclosed /* comment")
			}
			i += 2 + len([]rune(string(rs[i+2:])[:end])) + 2
		case c == '=':
			out = append(out, jaasToken{tokEquals, "="})
			i++
		case c == ';':
			out = append(out, jaasToken{tokSemicolon, ";"})
			i++
		case c == '"' || c == '\'':
			text, n := quotedString(rs[i:])
			out = append(out, jaasToken{tokQuoted, text})
			i += n
		case isJAASWordChar(c):
			start := i
			for i < len(rs) && isJAASWordChar(rs[i]) {
				i++
			}
			out = append(out, jaasToken{tokWord, string(rs[start:i])})
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return out, nil
}

var jaasEscapes = map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

func isJAASWordChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0xA0 ||
		strings.ContainsRune("._-$", c)
}

// quotedString reads a StreamTokenizer quoted string: it ends at the same quote or at the
// end of the line, and knows the escapes \a \b \f \n \r \t \v, octal \ooo and \<any>.
func quotedString(rs []rune) (string, int) {
	quote := rs[0]
	var b strings.Builder
	i := 1
	for ; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == quote:
			return b.String(), i + 1
		case c == '\n' || c == '\r':
			return b.String(), i
		case c == '\\' && i+1 < len(rs):
			i++
			e := rs[i]
			if e < '0' || e > '7' {
				if r, ok := jaasEscapes[e]; ok {
					e = r
				}
				b.WriteRune(e)
				continue
			}
			// Octal: up to three digits, the third only after a first digit of 0-3.
			first, v := e, e-'0'
			if i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '7' {
				i++
				v = v*8 + rs[i] - '0'
				if first <= '3' && i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '7' {
					i++
					v = v*8 + rs[i] - '0'
				}
			}
			b.WriteRune(v)
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), i
}
