package responses

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/serving/request"
)

func conv(text string) []request.Message {
	return []request.Message{{Role: request.RoleUser, Content: text}}
}

func TestStoreEvictsOldestEntry(t *testing.T) {
	s := NewStore(3, 1<<20)
	for i := range 5 {
		s.Put(fmt.Sprintf("resp_%d", i), conv(fmt.Sprint(i)))
		if s.Len() > 3 {
			t.Fatalf("after %d puts the store holds %d entries, over its bound of 3", i+1, s.Len())
		}
	}
	for i := range 5 {
		got, ok := s.Get(fmt.Sprintf("resp_%d", i))
		if want := i >= 2; ok != want {
			t.Errorf("resp_%d kept %v, want %v", i, ok, want)
		}
		if ok && got[0].Content != fmt.Sprint(i) {
			t.Errorf("resp_%d holds %+v", i, got)
		}
	}
}

func TestStoreByteBound(t *testing.T) {
	big := strings.Repeat("x", 400)
	s := NewStore(100, 1000)
	s.Put("a", conv(big))
	s.Put("b", conv(big))
	s.Put("c", conv(big)) // 3 × ~464 bytes > 1000: a goes
	if _, ok := s.Get("a"); ok {
		t.Error("a survived past the byte bound")
	}
	for _, id := range []string{"b", "c"} {
		if _, ok := s.Get(id); !ok {
			t.Errorf("%s was evicted; only the oldest should be", id)
		}
	}
	if s.Put("huge", conv(strings.Repeat("y", 2000))) {
		t.Error("a conversation over the whole byte bound was kept")
	}
	if _, ok := s.Get("b"); !ok {
		t.Error("refusing an oversized entry evicted others")
	}
}

func TestStoreReplaceKeepsOrderHonest(t *testing.T) {
	s := NewStore(2, 1<<20)
	s.Put("a", conv("1"))
	s.Put("b", conv("2"))
	s.Put("a", conv("3")) // a is now the newest
	s.Put("c", conv("4")) // so b goes
	if _, ok := s.Get("b"); ok {
		t.Error("b survived; it was the oldest")
	}
	if got, ok := s.Get("a"); !ok || got[0].Content != "3" {
		t.Errorf("a = %+v, %v; want the replacement", got, ok)
	}
	if s.Len() != 2 {
		t.Errorf("Len %d, want 2", s.Len())
	}
}

// TestStoreLongRun checks that the order list stays compact over many
// evictions.
func TestStoreLongRun(t *testing.T) {
	s := NewStore(4, 1<<20)
	for i := range 10000 {
		s.Put(fmt.Sprint(i), conv("x"))
	}
	if s.Len() != 4 || len(s.order)-s.head != 4 || len(s.order) > 16 {
		t.Errorf("Len %d, order %d (head %d)", s.Len(), len(s.order), s.head)
	}
	if _, ok := s.Get("9999"); !ok {
		t.Error("the newest entry is missing")
	}
}
