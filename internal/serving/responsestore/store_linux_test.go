//go:build linux

package responsestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
	"github.com/skulk/skulk/internal/testkit"
)

// TestResponseJournalHealsOnTmpfs fills a real 2 MiB tmpfs under the
// journal: it stops writing (and says so in JournalStatus) while the store
// keeps serving from memory; once the disk has room Heal resumes it and
// journals what the store holds, so a restart finds every conversation,
// those kept while nothing was written included.
func TestResponseJournalHealsOnTmpfs(t *testing.T) {
	root := testkit.TmpFS(t, "2m")
	dir := filepath.Join(root, "responses")
	st, _ := openStore(t, dir)
	st.Put("resp_0", conversation(0))
	filler := filepath.Join(root, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break // the disk is full
		}
	}
	f.Close()
	n := 1
	for ; n < 200; n++ {
		st.Put(fmt.Sprintf("resp_%d", n), conversation(n))
		if err := st.journal.Sync(); err != nil {
			t.Fatal(err)
		}
		if s, _ := st.JournalStatus(); s.Degraded {
			break
		}
	}
	s, ok := st.JournalStatus()
	if !ok || !s.Degraded || !vfs.IsNoSpace(s.Cause) {
		t.Fatalf("journal status %+v after filling the disk", s)
	}
	if healed, err := st.Heal(); healed || err != nil {
		t.Fatalf("Heal on a full disk: %v, %v", healed, err)
	}
	for i := n + 1; i <= n+3; i++ {
		st.Put(fmt.Sprintf("resp_%d", i), conversation(i))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if healed, err := st.Heal(); !healed || err != nil {
		t.Fatalf("Heal with room again: %v, %v", healed, err)
	}
	st.Put("resp_last", conversation(999))
	if err := st.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	st, _ = openStore(t, dir)
	for i := 0; i <= n+3; i++ {
		if got, ok := st.Get(fmt.Sprintf("resp_%d", i)); !ok || !reflect.DeepEqual(got, conversation(i)) {
			t.Fatalf("resp_%d lost across the degraded spell and a restart", i)
		}
	}
	if _, ok := st.Get("resp_last"); !ok {
		t.Fatal("the response stored after healing was lost")
	}
}
