package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readFile loads the properties of a YAML, JSON or Java .properties file, chosen by the
// file's extension or, for other names, by its content.
func readFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return parseYAML(data)
	case ".json":
		return parseJSON(data)
	case ".properties":
		return parseProperties(data)
	}
	switch sniffFormat(data) {
	case "json":
		return parseJSON(data)
	case "yaml":
		return parseYAML(data)
	default:
		return parseProperties(data)
	}
}

// sniffFormat guesses a file's format: JSON starts with "{"; a file whose property lines
// use "=" is a properties file; otherwise YAML if it reads as a YAML mapping ("key: value"
// lines mean the same in both).
func sniffFormat(data []byte) string {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\uFEFF")))
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return "json"
	}
	for _, line := range strings.Split(string(trimmed), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if eq, colon := strings.IndexByte(line, '='), strings.IndexByte(line, ':'); eq >= 0 && (colon < 0 || eq < colon) {
			return "properties"
		}
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		return "yaml"
	}
	return "properties"
}

// parseYAML reads a flat YAML mapping. Scalars keep the text they were written with, so
// 010 and 1.0 reach validation as written, as a Java property would; a list of scalars
// becomes a comma-separated value.
func parseYAML(data []byte) (map[string]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	out := map[string]string{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("parse YAML: the document must be a mapping of property names to values")
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if first, dup := lines[k.Value]; dup {
			return nil, fmt.Errorf("parse YAML: line %d: key %q already given on line %d", k.Line, k.Value, first)
		}
		lines[k.Value] = k.Line
		value, err := yamlValue(v)
		if err != nil {
			return nil, fmt.Errorf("parse YAML: line %d: key %q: %w", k.Line, k.Value, err)
		}
		out[k.Value] = value
	}
	return out, nil
}

func yamlValue(n *yaml.Node) (string, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "", nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		items := make([]string, len(n.Content))
		for i, item := range n.Content {
			if item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode {
				return "", errors.New("a list may hold strings, numbers and booleans only")
			}
			items[i] = item.Value
		}
		return strings.Join(items, ","), nil
	default:
		return "", errors.New("want a string, number, boolean or a list of them (MM2 properties are flat: write nested keys with dots)")
	}
}

// parseJSON reads a flat JSON object. Numbers keep the text they were written with; a
// repeated key is an error rather than silently taking the last.
func parseJSON(data []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("parse JSON: the document must be an object of property names to values")
	}
	out := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("parse JSON: %w", err)
		}
		key := tok.(string) // object keys are strings
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("parse JSON: key %q given twice", key)
		}
		value, err := jsonValue(dec)
		if err != nil {
			return nil, fmt.Errorf("parse JSON: key %q: %w", key, err)
		}
		out[key] = value
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("parse JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("parse JSON: unexpected data after the object")
	}
	return out, nil
}

func jsonValue(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	if tok == json.Delim('[') {
		var items []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return "", err
			}
			s, ok := jsonScalar(tok)
			if !ok {
				return "", errors.New("a list may hold strings, numbers and booleans only")
			}
			items = append(items, s)
		}
		if _, err := dec.Token(); err != nil {
			return "", err
		}
		return strings.Join(items, ","), nil
	}
	s, ok := jsonScalar(tok)
	if !ok {
		return "", errors.New("want a string, number, boolean or a list of them (MM2 properties are flat: write nested keys with dots)")
	}
	return s, nil
}

func jsonScalar(tok json.Token) (string, bool) {
	switch v := tok.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	case nil:
		return "", true
	}
	return "", false
}
