package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseYAML(t *testing.T) {
	in := `
# comment
a: "quoted"
b: plain text
c: 3
d: 010
e: 1.0
f: true
g: yes
h:
i: ~
j: [x, "y z", 1]
k:
  - one
  - two
l: &anchor v
m: *anchor
n: 'single'
`
	got, err := parseYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": "quoted", "b": "plain text", "c": "3", "d": "010", "e": "1.0", "f": "true", "g": "yes",
		"h": "", "i": "", "j": "x,y z,1", "k": "one,two", "l": "v", "m": "v", "n": "single",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	for in, want := range map[string]string{
		"a: 1\na: 2":       `key "a" already given on line 1`,
		"a:\n  b: 1":       `key "a": want a string`,
		"- a\n- b":         "must be a mapping",
		"a: [[1]]":         "a list may hold",
		"a: b: c":          "parse YAML",
		"key = value\nx=y": "must be a mapping",
	} {
		_, err := parseYAML([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseYAML(%q) error = %v, want %q", in, err, want)
		}
	}
	if got, err := parseYAML([]byte("# nothing\n")); err != nil || len(got) != 0 {
		t.Errorf("empty document: %v %v", got, err)
	}
}

func TestParseJSON(t *testing.T) {
	got, err := parseJSON([]byte(`{"a": "s", "b": 3, "c": 1.50, "d": true, "e": false, "f": null, "g": ["x", 2, true], "h": 1e3}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "s", "b": "3", "c": "1.50", "d": "true", "e": "false", "f": "", "g": "x,2,true", "h": "1e3"}
	if !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for in, wantErr := range map[string]string{
		`{"a": 1, "a": 2}`:  `key "a" given twice`,
		`{"a": {"b": 1}}`:   `key "a": want a string`,
		`[1]`:               "must be an object",
		`{"a": 1} {"b": 2}`: "after the object",
		`{"a": [[1]]}`:      "a list may hold",
		`{"a": 1`:           "parse JSON",
	} {
		if _, err := parseJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("parseJSON(%q) error = %v, want %q", in, err, wantErr)
		}
	}
}

func TestSniffFormat(t *testing.T) {
	tests := map[string]string{
		`  {"a": 1}`:                           "json",
		"a=1\nb: 2":                            "properties",
		"# c\nsource.cluster.alias = A":        "properties",
		"source.cluster.alias: A\ngroups: .*":  "yaml",
		"a: 1\nb: *undefined":                  "properties", // not YAML, so the Java format
		"clusters = A, B\nA->B.enabled = true": "properties",
		`groups: "a=b"`:                        "yaml", // "=" inside a value after ":"
	}
	for in, want := range tests {
		if got := sniffFormat([]byte(in)); got != want {
			t.Errorf("sniffFormat(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFormatByExtension(t *testing.T) {
	// The same text means different things as YAML and as properties.
	text := "groups: a # b\n"
	for name, want := range map[string]string{"c.yml": "a", "c.properties": "a # b"} {
		props, err := readFile(writeFile(t, name, text))
		if err != nil {
			t.Fatal(err)
		}
		if props["groups"] != want {
			t.Errorf("%s: groups = %q, want %q", name, props["groups"], want)
		}
	}
}
