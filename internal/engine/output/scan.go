package output

import "strings"

// jsonScan finds where a JSON object or array that starts at offset 0 of a
// growing buffer ends, resuming where the last call stopped. It counts
// brackets outside strings only; the value is validated later.
type jsonScan struct {
	pos   int
	depth int
	inStr bool
	esc   bool
}

// advance returns the end offset (exclusive) of the value in s, or -1 when
// s does not yet hold all of it.
func (j *jsonScan) advance(s string) int {
	for ; j.pos < len(s); j.pos++ {
		c := s[j.pos]
		if j.inStr {
			switch {
			case j.esc:
				j.esc = false
			case c == '\\':
				j.esc = true
			case c == '"':
				j.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			j.inStr = true
		case '{', '[':
			j.depth++
		case '}', ']':
			j.depth--
			if j.depth == 0 {
				j.pos++
				return j.pos
			}
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first non-space byte of s at or after
// i (len(s) if none); extra lists further bytes to skip.
func skipSpace(s string, i int, extra string) int {
	for i < len(s) && (isSpace(s[i]) || strings.IndexByte(extra, s[i]) >= 0) {
		i++
	}
	return i
}

// isPrefixOf reports whether s is a proper, non-empty prefix of marker.
func isPrefixOf(s, marker string) bool {
	return s != "" && len(s) < len(marker) && strings.HasPrefix(marker, s)
}

// firstMarker returns the earliest full occurrence of any marker in s
// (position and marker), or -1.
func firstMarker(s string, markers []string) (int, string) {
	at, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at) {
			at, which = i, m
		}
	}
	return at, which
}

// partialMarker returns the earliest position j < limit (any j when limit
// < 0) such that s[j:] is a proper prefix of a marker, or -1.
func partialMarker(s string, markers []string, limit int) int {
	longest := 0
	for _, m := range markers {
		longest = max(longest, len(m))
	}
	to := len(s)
	if limit >= 0 {
		to = min(to, limit)
	}
	for j := max(0, len(s)-longest+1); j < to; j++ {
		for _, m := range markers {
			if isPrefixOf(s[j:], m) {
				return j
			}
		}
	}
	return -1
}

// scrub removes every marker of the vocabulary from s.
func scrub(s string) string {
	for {
		i, m := firstMarker(s, markerVocabulary)
		if i < 0 {
			return s
		}
		s = s[:i] + s[i+len(m):]
	}
}
