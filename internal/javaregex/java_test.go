package javaregex

import (
	"bufio"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// javaInputs are the names every pattern is matched against on both engines: case,
// line terminators, whitespace Java and RE2 define differently, and non-ASCII letters.
var javaInputs = []string{
	"", "a", "A", "b", "ab", "aB", "abc", "aaa", "a-b", "a.b", "a,b", "1", "12", "_", " ", "-",
	"\t", "\n", "\r", "\r\n", "a\n", "a\r\n", "\x0B", "\f", "\u0085", "\u2028", "\u00A0", "\u3000",
	"é", "É", "k", "K", "\u212A", "ſ", "s", "S", "ß", "😀", "a😀", "{", "}", "]", "[", "\\", "|",
	"\x01", "!", "\x7F", "\x00", "A1", "console-consumer-42", "connect-mm2", "__consumer_offsets",
	"mm2-offset-syncs.B.internal", "orders.replica", "orders", "x.internal",
}

// javaCases are patterns the differential test always covers, on top of random ones.
var javaCases = []string{
	".*", "console-consumer-.*", `mm2.*\.internal`, `.*\.replica`, "__.*", "a|b", "a|", "|",
	"(?i)ab", "(?i)é", "(?i:a)b", "a(?i)b|c", "(a(?i)b)c", "(?i)[a-c]", "(?i)[^a]", "(?i)[Z-a]",
	"(?i)k", "(?i)s", "(?s).", ".", "(?d).", "(?s)(?-s).", "(?is)a.", "(?-i)a", "(?)a", "(?i-i)a",
	`\s`, `\S`, `\h`, `\H`, `\v`, `\V`, `\w+`, `\W`, `\d`, `\D`, `[\s]`, `[^\s]`, `[\S]`, `[\v-]`, `[\v-\x0D]`,
	`[\d-z]`, `[\w-]`, `[-a]`, `[a-]`, `[]a]`, `[^]a]`, `[a-z]`, `[!--]`, `[\-]`, `[^-]`,
	`\p{L}`, `\p{Lu}`, `(?i)\p{Lu}`, `\p{IsLatin}`, `\p{sc=Latin}`, `\p{gc=Lu}`, `\pL`, `\PL`, `\p{Lower}`,
	`(?i)\p{Lower}`, `\p{Alpha}`, `\P{Alpha}`, `\p{Punct}`, `\p{Space}`, `\p{Cntrl}`, `\p{XDigit}`, `\p{Graph}`,
	`\p{Print}`, `\p{Blank}`, `\p{ASCII}`, `\p{L1}`, `\p{all}`, `\p{LC}`, `\p{LD}`, `\p{IsLu}`, `[\p{L}\d]`, `[^\p{L}]`,
	`\x41`, `\x{1F600}`, `\u00e9`, `\uD83D\uDE00`, `\0101`, `\011`, `\0777`, `\cA`, `\c?`, `\e`, `\a`, `\t`,
	`\Qa.b\E`, `\Qa.b`, `\Q\E`, `x\Q1\E`, `\Q\\E`, `[\Q]\E]`, `\Q(\Ea)`, `\Qa\\Eb`, `\.\-\,`,
	"a{2}", "a{2,}", "a{0,2}", "a{2,3}?", "{2}", "a*{2}", "ab{0}", "(ab)*", "(ab)+?", "a??",
	"^a", "a$", "^a$", "a$|b", "(a$)", "(a$)?", "a$$", `a\z`, `\Aa`, `a\Z`, "(?:a|b$)", "^*a",
	"(?<name>a)b", "(?<n1>a)|(?<n2>b)", "]", "}", "a]", "a}", ",", "é+",
	// Invalid in Java: both must reject.
	"*a", "a**", "a{", "a{,2}", "{", "a{2", "a{3,2}", "(a", "a)", "[a", "[]", "[z-a]", `\`, `\i`,
	`\0`, `\08`, `\x4`, `\x{}`, `\u12`, `\p{Foo}`, `\p{}`, "(?<1a>x)", "(?<a>x)(?<a>y)", "(?@x)", "(?ix-",
	"a(?i)*", `\E`, `[\d-\w]`, `[a-\d]`,
}

// TestTranslateAgainstJava runs the same patterns and names through Java's Pattern and
// through translate + Go's regexp, and requires the same verdict for every pair: both
// engines reject the pattern, or both give the same full-match result for every name.
// A pattern translate refuses as unsupported must be one Java accepts or rejects;
// one it calls invalid must be one Java rejects.
func TestTranslateAgainstJava(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Java")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		// Integration tests fail, never skip, when a tool is missing (README).
		t.Fatalf("java not found on PATH: comparing with java.util.regex needs Java 11 or later to run testdata/FullMatch.java (install Java 17, as for the other integration tests, or use -short): %v", err)
	}

	patterns := append([]string(nil), javaCases...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		patterns = append(patterns, randomPattern(rng))
	}
	inputs := append([]string(nil), javaInputs...)
	for range 40 {
		inputs = append(inputs, randomInput(rng))
	}

	verdicts := runJava(t, java, patterns, inputs)
	var compared, refused, bothInvalid int
	defer func() {
		t.Logf("%d patterns: %d matched alike on %d names, %d refused as unsupported, %d invalid in both",
			len(patterns), compared, len(inputs), refused, bothInvalid)
	}()
	for i, pattern := range patterns {
		javaVerdict := verdicts[i]
		expr, err := translate(pattern)
		var re *regexp.Regexp
		if err == nil {
			re, err = regexp.Compile(expr)
			if err != nil {
				t.Errorf("%q: translation %q does not compile: %v", pattern, expr, err)
				continue
			}
		}
		var rerr *regexError
		switch {
		case err != nil && errors.As(err, &rerr) && rerr.unsupported:
			refused++ // on purpose: fine whatever Java says
		case err != nil && javaVerdict == "E":
			bothInvalid++
		case err != nil:
			t.Errorf("%q: Java accepts it, translate calls it invalid: %v", pattern, err)
		case err == nil && javaVerdict == "E":
			t.Errorf("%q: Java rejects it, translate accepts it as %q", pattern, expr)
		default:
			compared++
			for j, in := range inputs {
				want := javaVerdict[j] == '1'
				if got := re.MatchString(in); got != want {
					t.Errorf("%q on %q: Go %v, Java %v (translated to %.200q)", pattern, in, got, want, expr)
				}
			}
		}
	}
}

func runJava(t *testing.T, java string, patterns, inputs []string) []string {
	t.Helper()
	var encodedInputs strings.Builder
	for _, in := range inputs {
		encodedInputs.WriteString(" " + hex.EncodeToString([]byte(in)))
	}
	var stdin strings.Builder
	for _, p := range patterns {
		stdin.WriteString(hex.EncodeToString([]byte(p)) + encodedInputs.String() + "\n")
	}
	cmd := exec.Command(java, "testdata/FullMatch.java")
	cmd.Stdin = strings.NewReader(stdin.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running Java: %v", err)
	}
	var verdicts []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		verdicts = append(verdicts, sc.Text())
	}
	if len(verdicts) != len(patterns) {
		t.Fatalf("Java answered %d patterns of %d", len(verdicts), len(patterns))
	}
	return verdicts
}

// patternTokens are the pieces random patterns are made of: metacharacters, escapes,
// flags and literals, valid and invalid in combination.
var patternTokens = strings.Fields(`a b A k K é É 1 _ - , . * + ? *? +? ?? {2} {1,} {0,2} { } | ( ) (?: (?i) (?-i)
(?s) (?d) (?i: (?<g> [ ] [^ ^ $ \d \D \w \W \s \S \h \v \V \x41 \u00e9 \0101 \t \n \r \Q \E \. \- \p{L}
\p{Lu} \p{Lower} \P{Alpha} \p{IsLatin} \p{Punct} \cA && \\ \z \Z \A \e [a-z] [\d-z] a-z`)

func randomPattern(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(8) {
		b.WriteString(patternTokens[rng.IntN(len(patternTokens))])
	}
	return b.String()
}

var inputRunes = []rune("aAbBkK1_-. \n\r\t\x0BéÉ\u212Aſ{}]|\\😀")

func randomInput(rng *rand.Rand) string {
	rs := make([]rune, rng.IntN(5))
	for i := range rs {
		rs[i] = inputRunes[rng.IntN(len(inputRunes))]
	}
	return string(rs)
}
