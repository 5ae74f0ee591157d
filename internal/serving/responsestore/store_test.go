package responsestore

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/serving/api/responses"
	"github.com/skulk/skulk/internal/serving/request"
)

// openStore opens a journaled store in dir, logging into the returned
// buffer, and closes it when the test ends.
func openStore(t *testing.T, dir string) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	st, err := Open(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, &logs
}

func conversation(i int) []request.Message {
	return []request.Message{
		{Role: request.RoleUser, Content: fmt.Sprintf("question %d, with \"quotes\", ünïcödé and a\nnewline", i)},
		{Role: request.RoleAssistant, ReasoningContent: "thinking", ToolCalls: []request.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		{Role: request.RoleTool, ToolCallID: fmt.Sprintf("call_%d", i), Name: "get_weather", Content: "sunny"},
		{Role: request.RoleAssistant, Content: fmt.Sprintf("answer %d", i)},
	}
}

// TestResponseStoreSurvivesReopen stores conversations, closes the store
// and finds every one, field for field, in a store reopened on the same
// directory, which keeps journaling.
func TestResponseStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st, _ := openStore(t, dir)
	for i := range 3 {
		st.Put(fmt.Sprintf("resp_%d", i), conversation(i))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, logs := openStore(t, dir)
	for i := range 3 {
		got, ok := st.Get(fmt.Sprintf("resp_%d", i))
		if !ok || !reflect.DeepEqual(got, conversation(i)) {
			t.Fatalf("resp_%d after reopening: %v %+v", i, ok, got)
		}
	}
	st.Put("resp_3", conversation(3))
	st.Close()
	st, _ = openStore(t, dir)
	if got, ok := st.Get("resp_3"); !ok || !reflect.DeepEqual(got, conversation(3)) {
		t.Fatalf("a response stored after reopening is lost on the next: %v %+v", ok, got)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings from a clean journal: %s", logs)
	}
}

// TestResponseStoreReplayKeepsBounds checks that reopening evicts what the
// store's bounds evicted before: the oldest responses past the entry bound.
func TestResponseStoreReplayKeepsBounds(t *testing.T) {
	dir := t.TempDir()
	st, _ := openStore(t, dir)
	const extra = 5
	for i := range responses.DefaultStoreEntries + extra {
		st.Put(fmt.Sprintf("resp_%d", i), conversation(i))
	}
	st.Close()
	st, _ = openStore(t, dir)
	for i := range responses.DefaultStoreEntries + extra {
		_, ok := st.Get(fmt.Sprintf("resp_%d", i))
		if want := i >= extra; ok != want {
			t.Fatalf("resp_%d held %v after reopening, want %v", i, ok, want)
		}
	}
}

// TestResponseStoreTornJournal cuts the journal's last record short, as a
// crash mid-write would: reopening keeps the records before it, says in
// the log what was lost, and journals again.
func TestResponseStoreTornJournal(t *testing.T) {
	dir := t.TempDir()
	st, _ := openStore(t, dir)
	st.Put("resp_a", conversation(1))
	st.Put("resp_b", conversation(2))
	st.Close()
	live := filepath.Join(dir, "events.bin")
	fi, err := os.Stat(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(live, fi.Size()-7); err != nil {
		t.Fatal(err)
	}
	st, logs := openStore(t, dir)
	if _, ok := st.Get("resp_a"); !ok {
		t.Fatal("the record before the torn one is lost")
	}
	if _, ok := st.Get("resp_b"); ok {
		t.Fatal("the torn record was loaded")
	}
	if !strings.Contains(logs.String(), "damaged") {
		t.Fatalf("no warning about the damaged journal: %q", logs)
	}
	st.Put("resp_c", conversation(3))
	st.Close()
	st, _ = openStore(t, dir)
	if _, ok := st.Get("resp_c"); !ok {
		t.Fatal("a response stored after the repair is lost")
	}
}

// TestResponseStoreTooLargeToJournal stores a conversation within the
// store's byte bound but past the journal's record limit: it is served from
// memory, a warning says it will not survive a restart, and it does not.
func TestResponseStoreTooLargeToJournal(t *testing.T) {
	dir := t.TempDir()
	st, logs := openStore(t, dir)
	big := []request.Message{{Role: request.RoleUser, Content: strings.Repeat("x", 17<<20)}}
	st.Put("resp_big", big)
	st.Put("resp_small", conversation(1))
	if _, ok := st.Get("resp_big"); !ok {
		t.Fatal("the large conversation is not kept in memory")
	}
	if !strings.Contains(logs.String(), "too large for the response journal") {
		t.Fatalf("no warning for the unjournaled conversation: %q", logs)
	}
	st.Close()
	st, _ = openStore(t, dir)
	if _, ok := st.Get("resp_big"); ok {
		t.Fatal("the unjournaled conversation came back")
	}
	if _, ok := st.Get("resp_small"); !ok {
		t.Fatal("the conversation after the unjournaled one is lost")
	}
}

// TestResponseStoreOpenError: a journal path that is a file is an error
// that names it.
func TestResponseStoreOpenError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "responses")
	if err := os.WriteFile(path, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open on a file: %v", err)
	}
}
