package output

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// runStop feeds chunks to a matcher and returns the emitted text and the
// stop string that ended it ("" for none).
func runStop(stops, chunks []string) (string, string) {
	m := NewStopMatcher(stops)
	var out strings.Builder
	for _, c := range chunks {
		emit, stopped := m.Push(c)
		out.WriteString(emit)
		if stopped {
			return out.String(), m.Matched()
		}
	}
	out.WriteString(m.Flush())
	if m.Stopped() != (m.Matched() != "") {
		return out.String(), "<Stopped and Matched disagree>"
	}
	return out.String(), m.Matched()
}

// referenceStop is the text up to the earliest occurrence of any stop, and
// that stop (the shortest of those starting there).
func referenceStop(stops []string, text string) (string, string) {
	cut, matched := -1, ""
	for _, s := range stops {
		if s == "" {
			continue
		}
		i := strings.Index(text, s)
		if i >= 0 && (cut < 0 || i < cut || i == cut && len(s) < len(matched)) {
			cut, matched = i, s
		}
	}
	if cut < 0 {
		return text, ""
	}
	return text[:cut], matched
}

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		chunks  []string
		want    string
		matched string
	}{
		{"no stops", nil, []string{"abc", "def"}, "abcdef", ""},
		{"stop inside one chunk", []string{"END"}, []string{"helloENDworld"}, "hello", "END"},
		{"stop across chunks", []string{"END"}, []string{"hello E", "N", "D more"}, "hello ", "END"},
		{"partial that never completes", []string{"END"}, []string{"hello EN", "x"}, "hello ENx", ""},
		{"partial held at the end", []string{"END"}, []string{"hello EN"}, "hello EN", ""},
		{"earliest of several", []string{"world", "lo w"}, []string{"hello world"}, "hel", "lo w"},
		{"longer stop starting earlier wins", []string{"abcd", "bc"}, []string{"ab", "cd"}, "", "abcd"},
		{"shorter stop when longer fails", []string{"abcd", "bc"}, []string{"ab", "cx"}, "a", "bc"},
		{"shortest of those starting together", []string{"abcd", "ab"}, []string{"abcd"}, "", "ab"},
		{"empty stop ignored", []string{""}, []string{"abc"}, "abc", ""},
		{"multibyte stop", []string{"。"}, []string{"你好", "\xe3\x80", "\x82再见"}, "你好", "。"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, matched := runStop(tt.stops, tt.chunks)
			if got != tt.want || matched != tt.matched {
				t.Fatalf("got (%q, %q), want (%q, %q)", got, matched, tt.want, tt.matched)
			}
		})
	}
}

func TestStopMatcherHoldsOnlyPossibleStarts(t *testing.T) {
	m := NewStopMatcher([]string{"</s>", "###"})
	if emit, _ := m.Push("text <"); emit != "text " {
		t.Fatalf("emitted %q, want %q (only '<' may start a stop)", emit, "text ")
	}
	if emit, _ := m.Push("b> and #"); emit != "<b> and " {
		t.Fatalf("emitted %q, want %q", emit, "<b> and ")
	}
	if emit, stopped := m.Push("##"); emit != "" || !stopped {
		t.Fatalf("got (%q, %v), want (\"\", true)", emit, stopped)
	}
	if emit, stopped := m.Push("more"); emit != "" || !stopped {
		t.Fatalf("after stop got (%q, %v), want (\"\", true)", emit, stopped)
	}
	if m.Flush() != "" || !m.Stopped() {
		t.Fatal("Flush after a stop must be empty")
	}
}

// TestStopMatcherProperty checks random texts over a small alphabet (so
// stops and near-misses are common) in random chunkings against the
// reference cut.
func TestStopMatcherProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(max int) string {
		b := make([]byte, 1+r.IntN(max))
		for i := range b {
			b[i] = "abc"[r.IntN(3)]
		}
		return string(b)
	}
	for iter := range 20000 {
		stops := make([]string, r.IntN(4))
		for i := range stops {
			stops[i] = word(4)
		}
		text := ""
		if n := r.IntN(30); n > 0 {
			text = word(n)
		}
		var chunks []string
		for rest := text; rest != ""; {
			n := min(len(rest), 1+r.IntN(5))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		got, matched := runStop(stops, chunks)
		want, wantMatched := referenceStop(stops, text)
		if got != want || matched != wantMatched {
			t.Fatalf("iteration %d: stops %q chunks %q: got (%q, %q), want (%q, %q)", iter, stops, chunks, got, matched, want, wantMatched)
		}
	}
}
