package responses

import "github.com/skulk/skulk/internal/serving/request"

// Default bounds of a [Store]: the number of responses kept and the bytes
// of text they may hold together.
const (
	DefaultStoreEntries = 1024
	DefaultStoreBytes   = 64 << 20
)

// Store keeps the conversations of recent responses for
// previous_response_id, bounded both in entries and in bytes of text;
// when either bound is passed the oldest entries are evicted first (FIFO:
// continuing a conversation stores a new response that holds all of it, so
// the entry continued is not needed again). It lives in one node's memory
// (the API asks the other nodes for an id it does not hold, and journals
// what it puts here so that a restart can put it back). A Store is not
// safe for concurrent use.
type Store struct {
	maxEntries int
	maxBytes   int
	bytes      int
	entries    map[string]storeEntry
	order      []string // ids, oldest first; order[head:] are live
	head       int
}

type storeEntry struct {
	msgs []request.Message
	size int
}

// NewStore returns a Store of at most maxEntries responses and maxBytes of
// text (the defaults when either is not positive).
func NewStore(maxEntries, maxBytes int) *Store {
	if maxEntries <= 0 {
		maxEntries = DefaultStoreEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultStoreBytes
	}
	return &Store{maxEntries: maxEntries, maxBytes: maxBytes, entries: make(map[string]storeEntry)}
}

// Put keeps the conversation msgs under id, evicting the oldest entries to
// stay within the bounds. A conversation larger than the byte bound is not
// kept, and it returns false.
func (s *Store) Put(id string, msgs []request.Message) bool {
	size := messagesSize(msgs)
	if size > s.maxBytes {
		return false
	}
	if old, ok := s.entries[id]; ok {
		s.bytes -= old.size
		delete(s.entries, id)
		for i := s.head; i < len(s.order); i++ {
			if s.order[i] == id {
				s.order[i] = "" // no entry: skipped when eviction reaches it
			}
		}
	}
	for len(s.entries) > 0 && (len(s.entries) >= s.maxEntries || s.bytes+size > s.maxBytes) {
		s.evictOldest()
	}
	s.entries[id] = storeEntry{msgs: msgs, size: size}
	s.bytes += size
	s.order = append(s.order, id)
	return true
}

// Get returns the conversation kept under id.
func (s *Store) Get(id string) ([]request.Message, bool) {
	e, ok := s.entries[id]
	return e.msgs, ok
}

// Each calls f with every response kept, oldest first.
func (s *Store) Each(f func(id string, msgs []request.Message)) {
	for _, id := range s.order[s.head:] {
		if e, ok := s.entries[id]; ok && id != "" {
			f(id, e.msgs)
		}
	}
}

// Len returns the number of responses kept.
func (s *Store) Len() int { return len(s.entries) }

func (s *Store) evictOldest() {
	for s.head < len(s.order) {
		id := s.order[s.head]
		s.order[s.head] = ""
		s.head++
		if e, ok := s.entries[id]; ok {
			delete(s.entries, id)
			s.bytes -= e.size
			break
		}
	}
	// Compact the order when its dead prefix outgrows the live part.
	if s.head > len(s.order)/2 {
		s.order = append([]string(nil), s.order[s.head:]...)
		s.head = 0
	}
}

// messagesSize approximates the memory msgs hold by their text.
func messagesSize(msgs []request.Message) int {
	n := 0
	for _, m := range msgs {
		n += 64 + len(m.Content) + len(m.ReasoningContent) + len(m.ToolCallID) + len(m.Name)
		for _, tc := range m.ToolCalls {
			n += 32 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}
