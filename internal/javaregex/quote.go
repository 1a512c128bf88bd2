package javaregex

// removeQuoting rewrites \Q...\E sections into escaped characters before parsing, exactly
// as java.util.regex.Pattern does (RemoveQEQuoting), so quoting works anywhere, character
// classes included, and a \Q without \E quotes to the end. origin maps each rune of the
// result to the rune of pattern it came from, for error positions.
func removeQuoting(pattern []rune) (out []rune, origin []int) {
	i := 0
	for i < len(pattern)-1 {
		if pattern[i] != '\\' {
			i++
		} else if pattern[i+1] != 'Q' {
			i += 2
		} else {
			break
		}
	}
	if i >= len(pattern)-1 {
		return pattern, identityOrigin(len(pattern))
	}

	out = append([]rune(nil), pattern[:i]...)
	origin = identityOrigin(i)
	emit := func(from int, rs ...rune) {
		for _, r := range rs {
			out = append(out, r)
			origin = append(origin, from)
		}
	}

	i += 2
	inQuote, beginQuote := true, true
	for i < len(pattern) {
		from := i
		c := pattern[i]
		i++
		switch {
		case c >= 0x80 || isASCIIAlpha(c):
			emit(from, c)
		case isASCIIDigit(c):
			if beginQuote {
				// Java writes a quoted leading digit as \x3<digit> so that it cannot
				// extend an escape written just before the \Q.
				emit(from, '\\', 'x', '3')
			}
			emit(from, c)
		case c != '\\':
			if inQuote {
				emit(from, '\\')
			}
			emit(from, c)
		case inQuote:
			if i < len(pattern) && pattern[i] == 'E' {
				i++
				inQuote = false
			} else {
				emit(from, '\\', '\\')
			}
		default: // a backslash outside a quote
			if i < len(pattern) && pattern[i] == 'Q' {
				i++
				inQuote, beginQuote = true, true
				continue
			}
			emit(from, c)
			if i < len(pattern) {
				emit(i, pattern[i])
				i++
			}
		}
		beginQuote = false
	}
	return out, origin
}

func identityOrigin(n int) []int {
	origin := make([]int, n)
	for i := range origin {
		origin[i] = i
	}
	return origin
}

func isASCIIAlpha(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }
