package modeladmin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
)

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		name   string
		h      string
		length int64
		want   UploadRange
		bad    string // in the refusal
	}{
		{name: "whole_file", length: 10, want: UploadRange{0, 10, 10}},
		{name: "whole_file_unknown_length", length: -1, bad: "Content-Length"},
		{name: "whole_file_empty", length: 0, bad: "Content-Length"},
		{name: "first_part", h: "bytes 0-3/10", length: 4, want: UploadRange{0, 4, 10}},
		{name: "rest", h: "bytes 4-9/10", length: 6, want: UploadRange{4, 10, 10}},
		{name: "rest_chunked", h: "bytes 4-9/10", length: -1, want: UploadRange{4, 10, 10}},
		{name: "one_byte", h: "bytes 9-9/10", length: 1, want: UploadRange{9, 10, 10}},
		{name: "finish", h: "bytes */10", length: 0, want: UploadRange{10, 10, 10}},
		{name: "finish_with_body", h: "bytes */10", length: 3, bad: "carries no body"},
		{name: "length_differs", h: "bytes 0-3/10", length: 5, bad: "the body has 5 bytes, the range 4"},
		{name: "past_the_end", h: "bytes 4-10/10", length: 7, bad: "past the end"},
		{name: "backwards", h: "bytes 5-4/10", length: -1, bad: "START is after END"},
		{name: "other_unit", h: "items 0-3/10", length: 4, bad: "not bytes"},
		{name: "no_total", h: "bytes 0-3", length: 4, bad: "no /TOTAL"},
		{name: "unknown_total", h: "bytes 0-3/*", length: 4, bad: "TOTAL must be"},
		{name: "zero_total", h: "bytes */0", length: 0, bad: "TOTAL must be"},
		{name: "negative", h: "bytes -1-3/10", length: -1, bad: "numbers of bytes"},
		{name: "signed", h: "bytes +1-3/10", length: -1, bad: "numbers of bytes"},
		{name: "overflow", h: "bytes 0-3/99999999999999999999", length: 4, bad: "TOTAL must be"},
		{name: "no_dash", h: "bytes 3/10", length: 1, bad: "START-END"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseContentRange(tt.h, tt.length)
			if tt.bad != "" {
				fe, ok := errors.AsType[*fault.Error](err)
				if !ok || fe.Class != fault.ClassInvalid || fe.Param != "Content-Range" || !bytes.Contains([]byte(err.Error()), []byte(tt.bad)) {
					t.Fatalf("got %+v, %v; want a refusal saying %q", got, err, tt.bad)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestPlanUpload(t *testing.T) {
	tests := []struct {
		name  string
		have  int64
		r     UploadRange
		limit int64
		free  uint64
		at    int64
		code  string // the refusal's code
	}{
		{name: "fresh", have: 0, r: UploadRange{0, 10, 10}, free: 100, at: 0},
		{name: "resume", have: 4, r: UploadRange{4, 10, 10}, free: 100, at: 4},
		{name: "restart", have: 4, r: UploadRange{0, 10, 10}, free: 100, at: 0},
		{name: "finish_held", have: 10, r: UploadRange{10, 10, 10}, free: 0, at: 10},
		{name: "gap", have: 4, r: UploadRange{6, 10, 10}, free: 100, code: CodeUploadOffset},
		{name: "overlap", have: 6, r: UploadRange{4, 10, 10}, free: 100, code: CodeUploadOffset},
		{name: "finish_unheld", have: 4, r: UploadRange{10, 10, 10}, free: 100, code: CodeUploadOffset},
		{name: "held_more_than_total", have: 12, r: UploadRange{12, 12, 10}, free: 100, code: CodeUploadOffset},
		{name: "over_the_limit", have: 0, r: UploadRange{0, 10, 10}, limit: 9, free: 100, code: CodeUploadTooLarge},
		{name: "at_the_limit", have: 0, r: UploadRange{0, 10, 10}, limit: 10, free: 100, at: 0},
		{name: "disk_full", have: 4, r: UploadRange{4, 10, 10}, free: 5, code: "insufficient_storage"},
		{name: "disk_just_enough", have: 4, r: UploadRange{4, 10, 10}, free: 6, at: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, err := planUpload(tt.have, tt.r, tt.limit, tt.free)
			if tt.code != "" {
				fe, ok := errors.AsType[*fault.Error](err)
				if !ok || fe.Code != tt.code {
					t.Fatalf("got %d, %v; want code %s", at, err, tt.code)
				}
				if oe, ok := errors.AsType[*UploadOffsetError](err); ok && oe.Have != tt.have {
					t.Fatalf("the offset refusal names %d held, want %d", oe.Have, tt.have)
				}
				return
			}
			if err != nil || at != tt.at {
				t.Fatalf("got %d, %v; want %d", at, err, tt.at)
			}
		})
	}
}

func TestStalePartials(t *testing.T) {
	now := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-25*time.Hour), now.Add(-time.Hour)
	files := []partialFile{{"b.part", old}, {"a.part", old}, {"busy.part", old}, {"new.part", fresh}, {"other.txt", old}}
	got := stalePartials(files, map[string]bool{"busy": true}, now, 24*time.Hour)
	if want := []string{"a.part", "b.part"}; !equalStrings(got, want) {
		t.Fatalf("stale %v, want %v", got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUploadModel runs uploads over a real store: a file sent in two
// ranges imports; a range that does not start where the held bytes end is
// refused naming them; a corrupted file is refused and deleted; a body
// cut short keeps what arrived; a second upload of a file in progress is
// refused; a file that is not GGUF is refused and deleted; a stale partial
// goes.
func TestUploadModel(t *testing.T) {
	root := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(good)
	digest := hex.EncodeToString(sum[:])
	store := catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")})
	m := New(Config{Store: store, Cluster: clusterFunc(func() state.State { return state.State{} }),
		Catalog: func() *catalog.Catalog { c, _ := store.Catalog(); return c }, Refresh: func() {}})
	part := filepath.Join(root, "models", ".skulk", "upload", digest+partSuffix)
	held := func() int64 {
		fi, err := os.Stat(part)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	half := int64(len(good) / 2)
	total := int64(len(good))
	put := func(d string, r UploadRange, body []byte) (any, error) {
		return m.UploadModel(t.Context(), UploadRequest{Digest: d, Name: "stories.gguf", ID: "up", Range: r}, bytes.NewReader(body))
	}

	// Corrupted: the whole file with one byte changed.
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if _, err := put(digest, UploadRange{0, total, total}, bad); !isType[*DigestMismatchError](err) || fault.ClassOf(err) != fault.ClassInvalid {
		t.Fatalf("corrupted upload: %v", err)
	}
	if held() != -1 {
		t.Fatal("the corrupted upload's bytes stayed")
	}

	// Cut short: the body ends 100 bytes into a range of half the file.
	if _, err := put(digest, UploadRange{0, half, total}, good[:100]); !isType[*UploadIncompleteError](err) {
		t.Fatalf("short body: %v", err)
	}
	if held() != 100 {
		t.Fatalf("held %d bytes after a short body, want 100", held())
	}
	if doc, err := m.UploadStatus(t.Context(), digest); err != nil || doc.(map[string]any)["received_bytes"] != int64(100) {
		t.Fatalf("status %v %v", doc, err)
	}
	// Not where the bytes end.
	if _, err := put(digest, UploadRange{half, total, total}, good[half:]); !isType[*UploadOffsetError](err) {
		t.Fatalf("gap: %v", err)
	}
	// Busy while another upload of the file runs.
	release, err := m.claimUpload(digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put(digest, UploadRange{100, half, total}, good[100:half]); !isType[*UploadBusyError](err) || fault.ClassOf(err) != fault.ClassConflict {
		t.Fatalf("busy: %v", err)
	}
	release()
	// Resumed, then finished.
	if doc, err := put(digest, UploadRange{100, half, total}, good[100:half]); err != nil || doc.(map[string]any)["complete"] != false {
		t.Fatalf("resume: %v %v", doc, err)
	}
	doc, err := put(digest, UploadRange{half, total, total}, good[half:])
	if err != nil || doc.(map[string]any)["model_id"] != "up" {
		t.Fatalf("finish: %v %v", doc, err)
	}
	if held() != -1 {
		t.Fatal("the partial stayed after the import")
	}
	c, _ := store.Catalog()
	card, ok := c.Get("up")
	if !ok || card.Files[0] != "stories.gguf" || card.StorageBytes != total {
		t.Fatalf("card %+v %v", card, ok)
	}
	if _, err := store.Locate(card); err != nil {
		t.Fatal(err)
	}

	// Not a GGUF file: refused, deleted.
	junk := bytes.Repeat([]byte("not a model "), 100)
	js := sha256.Sum256(junk)
	jd := hex.EncodeToString(js[:])
	if _, err := put(jd, UploadRange{0, int64(len(junk)), int64(len(junk))}, junk); fault.ClassOf(err) != fault.ClassInvalid || !bytes.Contains([]byte(err.Error()), []byte("not a usable GGUF file")) {
		t.Fatalf("junk: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(part), jd+partSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the junk stayed: %v", err)
	}

	// A stale partial goes with the next upload; a fresh one stays.
	stale := filepath.Join(filepath.Dir(part), jd+partSuffix)
	if err := os.WriteFile(stale, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, time.Now().Add(-48*time.Hour), time.Now().Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := put(digest, UploadRange{0, half, total}, good[:half]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale partial stayed: %v", err)
	}
	if held() != half {
		t.Fatalf("held %d, want %d", held(), half)
	}
}

func isType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
