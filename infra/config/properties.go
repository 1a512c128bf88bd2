package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parseProperties reads the java.util.Properties format as Properties.load does: "#" and
// "!" comment lines, keys ended by an unescaped "=", ":" or blank, a backslash at the end
// of a line joining the next (whose leading blanks are dropped), and the escapes \t \n \r
// \f \uXXXX and \<any>. A later key replaces an earlier one.
//
// Java reads a properties file as ISO-8859-1; this reader takes UTF-8 and falls back to
// ISO-8859-1 for files that are not valid UTF-8, so both kinds of file read as meant.
func parseProperties(data []byte) (map[string]string, error) {
	text := decodeText(data)
	out := map[string]string{}
	lr := lineReader{text: []rune(text)}
	for {
		line, lineNo, ok := lr.next()
		if !ok {
			return out, nil
		}
		key, value := splitPropertyLine(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("properties line %d: key: %w", lineNo, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("properties line %d: value of %s: %w", lineNo, k, err)
		}
		out[k] = v
	}
}

func decodeText(data []byte) string {
	if utf8.Valid(data) {
		return strings.TrimPrefix(string(data), "\uFEFF")
	}
	rs := make([]rune, len(data))
	for i, b := range data {
		rs[i] = rune(b)
	}
	return string(rs)
}

// lineReader is Properties.LineReader: it yields logical lines with comments and blank
// lines dropped and continuations joined.
type lineReader struct {
	text   []rune
	pos    int
	lineNo int // natural line the reader is on, from 1
}

func (lr *lineReader) next() (line []rune, startLine int, ok bool) {
	skipWhite, appendedLineBegin, precedingBackslash := true, false, false
	var buf []rune
	if lr.lineNo == 0 {
		lr.lineNo = 1
	}
	startLine = lr.lineNo
	for {
		if lr.pos >= len(lr.text) {
			if len(buf) == 0 {
				return nil, 0, false
			}
			if precedingBackslash {
				buf = buf[:len(buf)-1]
			}
			return buf, startLine, true
		}
		c := lr.text[lr.pos]
		lr.pos++
		if skipWhite {
			if c == ' ' || c == '\t' || c == '\f' {
				continue
			}
			if !appendedLineBegin && (c == '\r' || c == '\n') {
				lr.countNewline(c)
				continue
			}
			skipWhite, appendedLineBegin = false, false
		}
		if len(buf) == 0 {
			startLine = lr.lineNo
			if c == '#' || c == '!' {
				for lr.pos < len(lr.text) && lr.text[lr.pos] != '\n' && lr.text[lr.pos] != '\r' {
					lr.pos++
				}
				skipWhite = true
				continue
			}
		}
		if c != '\n' && c != '\r' {
			buf = append(buf, c)
			precedingBackslash = c == '\\' && !precedingBackslash
			continue
		}
		lr.countNewline(c)
		if len(buf) == 0 {
			skipWhite = true
			continue
		}
		if !precedingBackslash {
			return buf, startLine, true
		}
		// A backslash at the end of a line joins the next line, without its leading blanks.
		buf = buf[:len(buf)-1]
		skipWhite, appendedLineBegin, precedingBackslash = true, true, false
	}
}

// countNewline advances the line count; "\r\n" counts once.
func (lr *lineReader) countNewline(c rune) {
	if c == '\r' && lr.pos < len(lr.text) && lr.text[lr.pos] == '\n' {
		lr.pos++
	}
	lr.lineNo++
}

// splitPropertyLine splits a logical line into its raw key and value, as Properties.load0.
func splitPropertyLine(line []rune) (key, value []rune) {
	keyLen, valueStart := 0, len(line)
	hasSep, precedingBackslash := false, false
	for keyLen < len(line) {
		c := line[keyLen]
		if (c == '=' || c == ':') && !precedingBackslash {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if (c == ' ' || c == '\t' || c == '\f') && !precedingBackslash {
			valueStart = keyLen + 1
			break
		}
		precedingBackslash = c == '\\' && !precedingBackslash
		keyLen++
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if c != ' ' && c != '\t' && c != '\f' {
			if hasSep || c != '=' && c != ':' {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	return line[:keyLen], line[valueStart:]
}

// unescapeProperty is Properties.loadConvert.
func unescapeProperty(s []rune) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c != '\\' {
				b.WriteRune(c)
			}
			continue
		}
		i++
		switch c = s[i]; c {
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", fmt.Errorf(`malformed \uxxxx encoding`)
			}
			i += 4
			// Java strings are UTF-16: an escaped surrogate pair is one character.
			if utf16.IsSurrogate(r) && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if low, ok := hex4(s, i+3); ok {
					if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r)
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), nil
}

func hex4(s []rune, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s[at:at+4]), 16, 16)
	return rune(v), err == nil
}
