package output

import "strings"

// StopMatcher cuts streamed text at the first occurrence of any of its stop
// strings. The stop string itself is never emitted.
type StopMatcher struct {
	stops   []string
	maxLen  int
	pending string // text that could still be the start of a stop string
	stopped bool
	matched string // the stop string that ended the text
}

// NewStopMatcher returns a matcher for stops; empty strings are ignored, so
// a matcher with no non-empty stops passes everything through.
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
			m.maxLen = max(m.maxLen, len(s))
		}
	}
	return m
}

// Push takes the next piece of text and returns what can be emitted now.
// stopped is true once a stop string has been seen; after that Push returns
// ("", true) and the rest of the generation should be abandoned.
func (m *StopMatcher) Push(text string) (emit string, stopped bool) {
	if m.stopped {
		return "", true
	}
	buf := m.pending + text
	hit := m.firstHit(buf)
	// A stop that might begin earlier than the hit, but runs past the end
	// of what we have, must be waited for: it could be the first match.
	if j := m.partialStart(buf, hit); j >= 0 {
		m.pending = buf[j:]
		return buf[:j], false
	}
	m.pending = ""
	if hit >= 0 {
		m.stopped = true
		return buf[:hit], true
	}
	return buf, false
}

// partialStart returns the earliest position j (before limit, when limit
// >= 0) at which buf[j:] is a proper prefix of some stop string, or -1.
func (m *StopMatcher) partialStart(buf string, limit int) int {
	from := max(0, len(buf)-m.maxLen+1)
	to := len(buf)
	if limit >= 0 {
		to = min(to, limit)
	}
	for j := from; j < to; j++ {
		tail := buf[j:]
		for _, s := range m.stops {
			if len(tail) < len(s) && strings.HasPrefix(s, tail) {
				return j
			}
		}
	}
	return -1
}

// Flush returns the text still held back at the end of the generation.
// A stop string inside it that was waiting on a longer, earlier candidate
// still cuts it (check Stopped afterwards).
func (m *StopMatcher) Flush() string {
	if m.stopped {
		return ""
	}
	out := m.pending
	m.pending = ""
	if hit := m.firstHit(out); hit >= 0 {
		m.stopped = true
		return out[:hit]
	}
	return out
}

// firstHit returns the earliest position of a full stop string in buf, or
// -1, and remembers which stop string it is. Of several starting there the
// shortest wins: it is the one a stream completes first, so the answer does
// not depend on how the text was split into pieces.
func (m *StopMatcher) firstHit(buf string) int {
	hit := -1
	for _, s := range m.stops {
		i := strings.Index(buf, s)
		if i >= 0 && (hit < 0 || i < hit || i == hit && len(s) < len(m.matched)) {
			hit, m.matched = i, s
		}
	}
	return hit
}

// Stopped reports whether a stop string has been matched.
func (m *StopMatcher) Stopped() bool { return m.stopped }

// Matched returns the stop string that ended the text, or "" while none has.
func (m *StopMatcher) Matched() string {
	if !m.stopped {
		return ""
	}
	return m.matched
}
