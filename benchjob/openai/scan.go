package openai

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A JSON scanner that validates as encoding/json does (the same grammar,
// control characters refused in strings, at most maxDepth nested objects
// and arrays) and notes where the values of a few keys of an object are,
// without building anything: the chunk decoder's one pass.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// span is where a value is in the data: data[start:end]; end 0 when the key
// was not there.
type span struct{ start, end int }

// isSpace is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace is the index of the first non-whitespace byte at or after i.
func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// value checks the value starting at d[i] (no leading space) and returns
// the index after it; -1 when it is not valid JSON.
func value(d []byte, i, depth int) int {
	if i >= len(d) {
		return -1
	}
	switch c := d[i]; {
	case c == '"':
		return stringEnd(d, i)
	case c == '{':
		return object(d, i, depth+1, nil, nil)
	case c == '[':
		return array(d, i, depth+1, nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return number(d, i)
	case c == 't':
		return literal(d, i, "true")
	case c == 'f':
		return literal(d, i, "false")
	case c == 'n':
		return literal(d, i, "null")
	}
	return -1
}

func literal(d []byte, i int, lit string) int {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// object checks the object at d[i] ('{'); the value of keys[k], where it
// appears, goes into spans[k] (the last one where a key repeats, as
// encoding/json keeps it).
func object(d []byte, i, depth int, keys []string, spans []span) int {
	if depth > maxDepth {
		return -1
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return -1
		}
		ke := stringEnd(d, i)
		if ke < 0 {
			return -1
		}
		k := -1
		if len(keys) > 0 {
			k = keyIndex(d[i+1:ke-1], keys)
		}
		i = skipSpace(d, ke)
		if i >= len(d) || d[i] != ':' {
			return -1
		}
		i = skipSpace(d, i+1)
		ve := value(d, i, depth)
		if ve < 0 {
			return -1
		}
		if k >= 0 {
			spans[k] = span{i, ve}
		}
		i = skipSpace(d, ve)
		if i >= len(d) {
			return -1
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// keyIndex is the index in keys of the raw (quoted, maybe escaped) key q;
// -1 when none.
func keyIndex(q []byte, keys []string) int {
	var buf [32]byte
	k := q
	for _, c := range q {
		if c == '\\' {
			k = unquote(buf[:0], q)
			break
		}
	}
	for j, s := range keys {
		if string(k) == s {
			return j
		}
	}
	return -1
}

// array checks the array at d[i] ('['); each element's span is handed to
// each (nil: none).
func array(d []byte, i, depth int, each func(s span)) int {
	if depth > maxDepth {
		return -1
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1
	}
	for {
		e := value(d, i, depth)
		if e < 0 {
			return -1
		}
		if each != nil {
			each(span{i, e})
		}
		i = skipSpace(d, e)
		if i >= len(d) {
			return -1
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// number checks the number at d[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(d []byte, i int) int {
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		return -1
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// strPlain[c] is true for the bytes a string holds as they are: not ", \
// or a control character.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < len(t); c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringEnd checks the string at d[i] ('"') and returns the index after its
// closing quote: no byte below 0x20, only JSON's escapes.
func stringEnd(d []byte, i int) int {
	for i++; i < len(d); i++ {
		for i < len(d) && strPlain[d[i]] {
			i++
		}
		if i == len(d) {
			break
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(d) {
				return -1
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if hex4(d[i+1:]) < 0 {
					return -1
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// hex4 is the value of the four hex digits at the start of b; -1 when
// there are none.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unquote appends to dst the string whose checked contents (between the
// quotes) are q, unescaped as encoding/json does (a lone surrogate is
// U+FFFD); bytes that are not UTF-8 stay as they are.
func unquote(dst, q []byte) []byte {
	for i := 0; i < len(q); {
		c := q[i]
		if c != '\\' {
			j := i + 1
			for j < len(q) && q[j] != '\\' {
				j++
			}
			dst = append(dst, q[i:j]...)
			i = j
			continue
		}
		e := q[i+1]
		i += 2
		switch e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(q[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(q) && q[i] == '\\' && q[i+1] == 'u' {
					r2 = hex4(q[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					i += 6
					r = dec
				} else {
					r = unicode.ReplacementChar
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \ /
			dst = append(dst, e)
		}
	}
	return dst
}
