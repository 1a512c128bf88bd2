package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		in      string
		module  string
		options map[string]string
		err     string
	}{
		{in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
			module: plainLoginModule, options: map[string]string{"username": "u", "password": "p"}},
		{in: "  org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED\n  username=u1\n  password='a b' ;  ",
			module: scramLoginModule, options: map[string]string{"username": "u1", "password": "a b"}},
		{in: `x.Module optional /* comment */ a="1" // to the end of the line` + "\n" + `b="\t\"\\\101\0";`,
			module: "x.Module", options: map[string]string{"a": "1", "b": "\t\"\\A\x00"}},
		{in: `x.Module sufficient a="é=;";`, module: "x.Module", options: map[string]string{"a": "é=;"}},
		{in: `x.Module requisite;`, module: "x.Module", options: map[string]string{}},
		{in: ``, err: "0 login modules"},
		{in: `x.Module`, err: "control flag not given"},
		{in: `x.Module maybe;`, err: "invalid login module control flag"},
		{in: `x.Module required a=;`, err: `value not given for option "a"`},
		{in: `x.Module required a "b";`, err: `value not given for option "a"`},
		{in: `x.Module required a="b"`, err: "semicolon"},
		{in: `x.Module required; y.Module required;`, err: "2 login modules"},
		{in: `x.Module required /* open`, err: "unclosed /* comment"},
		{in: `x.Module required a=b@c;`, err: "unexpected character"},
		{in: `= x;`, err: "class name must come first"},
	}
	for _, tt := range tests {
		e, err := parseJAAS(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseJAAS(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseJAAS(%q): %v", tt.in, err)
			continue
		}
		if e.module != tt.module || !maps.Equal(e.options, tt.options) {
			t.Errorf("parseJAAS(%q) = %s %q, want %s %q", tt.in, e.module, e.options, tt.module, tt.options)
		}
	}
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\"";`)
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = parseJAAS(in)
	})
}
