package config

import (
	"maps"
	"strings"
	"testing"
)

// The cases follow java.util.Properties.load.
func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"separators", "a=1\nb:2\nc 3\nd\t4\ne = 5\nf : 6\ng  =  7", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7"}},
		{"only the first separator counts", "a==1\nb=:2\nc :=3", map[string]string{"a": "=1", "b": ":2", "c": "=3"}},
		{"key without value", "a\nb=\nc :", map[string]string{"a": "", "b": "", "c": ""}},
		{"comments and blank lines", "# one\n! two\n   # three\n\n \t \na=1", map[string]string{"a": "1"}},
		{"comment marker inside a value", "a=1 # not a comment", map[string]string{"a": "1 # not a comment"}},
		{"trailing blanks kept", "a=1  ", map[string]string{"a": "1  "}},
		{"leading blanks dropped", "   a = 1", map[string]string{"a": "1"}},
		{"continuation", "a=x,\\\n    y,\\\n\tz", map[string]string{"a": "x,y,z"}},
		{"continuation does not start a comment", "a=x\\\n  # y", map[string]string{"a": "x# y"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"continuation into a blank line ends it", "a=x\\\n\nb=2", map[string]string{"a": "x", "b": "2"}},
		{"trailing backslash at the end of input", "a=x\\", map[string]string{"a": "x"}},
		{"CR and CRLF", "a=1\rb=2\r\nc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"escaped separators in keys", `a\=b=1` + "\n" + `c\:d:2` + "\n" + `e\ f 3`, map[string]string{"a=b": "1", "c:d": "2", "e f": "3"}},
		{"escapes", `a=\t\n\r\f\\\x\"` + "\n" + `b=\u0041\u00e9`, map[string]string{"a": "\t\n\r\f\\x\"", "b": "Aé"}},
		{"escaped surrogate pair", `a=\uD83D\uDE00`, map[string]string{"a": "😀"}},
		{"later key wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"UTF-8", "a=é", map[string]string{"a": "é"}},
		{"ISO-8859-1 when not UTF-8", "a=\xe9", map[string]string{"a": "é"}},
		{"byte order mark", "\uFEFFa=1", map[string]string{"a": "1"}},
		{"JAAS value", `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\\"w";`,
			map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\"w";`}},
		{"driver keys", "us->eu.enabled = true", map[string]string{"us->eu.enabled": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	_, err := parseProperties([]byte("a=1\nb=\\u12g4"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), `\uxxxx`) {
		t.Errorf("err = %v", err)
	}
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=1\nb\\\n c:2\n#x\n")
	f.Add(`a\u00=1`)
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = parseProperties([]byte(in))
	})
}
