package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

const (
	stories = "../../../testdata/models/stories260K.gguf"
	tiny    = "../../../testdata/models/llama-2-tiny-random.gguf"
	synthQ4 = "../../../testdata/synthetic/synth-llama-q4_k.gguf"
	synthQ8 = "../../../testdata/synthetic/synth-llama-q8_0.gguf"
)

type env struct {
	hub   *hubstandin.Server
	store *catalog.Store
	root  string
}

func newEnv(t *testing.T) *env {
	root := t.TempDir()
	return &env{hub: hubstandin.New(t), root: root, store: catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")})}
}

func (e *env) client(t *testing.T, mod func(*Config)) *Client {
	cfg := Config{Endpoint: e.hub.URL(), InitialHeaderBytes: 4096}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) manager(t *testing.T, c *Client, mod func(*ManagerConfig)) *Manager {
	cfg := ManagerConfig{Client: c, Store: e.store, HeadroomBytes: 1, RetryDelay: time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func wholeCard(t *testing.T, id, path string) catalog.Card {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CardFromGGUF(id, f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		bad  bool
	}{
		{in: "hf:ggml-org/models", want: Ref{Repo: "ggml-org/models"}},
		{in: "hf:o/r/sub/m-Q4_K_M.gguf@abc", want: Ref{Repo: "o/r", File: "sub/m-Q4_K_M.gguf", Revision: "abc"}},
		{in: "o/r@v1.0", want: Ref{Repo: "o/r", Revision: "v1.0"}},
		{in: "hf:o", bad: true},
		{in: "hf:o/r/../x.gguf", bad: true},
		{in: "hf:o/r/readme.md", bad: true},
		{in: "hf:o/r@", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.bad != (err != nil) || (!tt.bad && got != tt.want) {
			t.Errorf("ParseRef(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestPickFiles(t *testing.T) {
	info := func(names ...string) RepoInfo {
		r := RepoInfo{Repo: "o/r", Commit: strings.Repeat("a", 40)}
		for _, n := range names {
			r.Files = append(r.Files, RepoFile{Path: n})
		}
		return r
	}
	tests := []struct {
		name  string
		files []string
		want  string
	}{
		{"q4_k_m first", []string{"m-Q8_0.gguf", "m-Q4_K_M.gguf", "m-Q5_K_M.gguf", "README.md"}, "m-Q4_K_M.gguf"},
		{"then q5_k_m", []string{"m-Q8_0.gguf", "m-Q5_K_M.gguf", "m-F16.gguf"}, "m-Q5_K_M.gguf"},
		{"projector skipped", []string{"mmproj-m-Q4_K_M.gguf", "m-Q8_0.gguf"}, "m-Q8_0.gguf"},
		{"complete split", []string{"m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf", "m-Q8_0.gguf"}, "m-Q4_K_M-00001-of-00002.gguf"},
		{"incomplete split skipped", []string{"m-Q4_K_M-00001-of-00002.gguf", "m-Q8_0.gguf"}, "m-Q8_0.gguf"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			got, err := PickFiles(info(tt.files...), "")
			if err != nil || got[0] != tt.want {
				t.Fatalf("got %v, %v", got, err)
			}
		})
	}
	if _, err := PickFiles(info("a.gguf", "b.gguf"), ""); err == nil || !strings.Contains(err.Error(), "name one") {
		t.Fatalf("ambiguous files: %v", err)
	}
}

// TestAddReadsOnlyTheHeader adds a model from the stand-in Hub naming no
// file and no revision: main resolves to the commit, Q4_K_M is preferred,
// and the card equals one computed from the whole file although only a
// prefix was transferred, through growing Range requests.
func TestAddReadsOnlyTheHeader(t *testing.T) {
	e := newEnv(t)
	commit := e.hub.AddRepo("skulk-test/synth-GGUF", "", hubstandin.File{Path: "synth-Q8_0.gguf", Local: synthQ8, LFS: true}, hubstandin.File{Path: "synth-Q4_K_M.gguf", Local: synthQ4, LFS: true}, hubstandin.File{Path: "README.md", Local: "../../../testdata/SOURCES.md"})
	c := e.client(t, nil)
	ref, _ := ParseRef("hf:skulk-test/synth-GGUF")
	card, path, err := Add(t.Context(), c, e.store, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	if card.ID != "synth-q4_k_m" || card.Revision != commit || card.Files[0] != "synth-Q4_K_M.gguf" || card.Repo != "skulk-test/synth-GGUF" {
		t.Fatalf("card %+v", card)
	}
	want := wholeCard(t, card.ID, synthQ4)
	want.Repo, want.Revision, want.Files = card.Repo, card.Revision, card.Files
	if want.Digest() != card.Digest() {
		t.Fatalf("header-only card differs from the whole file's:\n%+v\n%+v", card, want)
	}
	var ranges []string
	for _, r := range e.hub.Requests("/cdn/") {
		if !strings.HasPrefix(r.Range, "bytes=0-") {
			t.Fatalf("header read without a prefix range: %+v", r)
		}
		ranges = append(ranges, r.Range)
	}
	if len(ranges) < 2 || ranges[0] != "bytes=0-4095" {
		t.Fatalf("ranges %v: want growth from 4096 bytes", ranges)
	}
	cat, errs := e.store.Catalog()
	if got, ok := cat.Get(card.ID); !ok || len(errs) != 0 || got.Revision != commit {
		t.Fatalf("the added card is not in the catalog (%v)", errs)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), commit) {
		t.Fatal("the card file does not pin the commit")
	}
}

// TestHeaderThatNeverEnds serves a GGUF whose first metadata string claims
// more bytes than the limit: the client grows its range up to the limit and
// refuses.
func TestHeaderThatNeverEnds(t *testing.T) {
	e := newEnv(t)
	b := make([]byte, 256<<10)
	copy(b, "GGUF")
	b[4] = 3                               // version
	b[16] = 1                              // kv_count = 1 (tensor_count 0)
	b[24] = 4                              // key length 4
	copy(b[32:], "long")                   // key
	b[36] = byte(gguf.TypeString)          // value type
	b[40], b[41], b[42] = 0xff, 0xff, 0x7f // value length ~8 MiB
	p := filepath.Join(t.TempDir(), "endless.gguf")
	os.WriteFile(p, b, 0o644)
	commit := e.hub.AddRepo("o/endless", "", hubstandin.File{Path: "endless.gguf", Local: p, LFS: true})
	c := e.client(t, func(c *Config) { c.MaxHeaderBytes = 64 << 10 })
	_, err := c.ReadHeader(t.Context(), "o/endless", commit, "endless.gguf")
	var hte *HeaderTooLargeError
	if !errors.As(err, &hte) || hte.Limit != 64<<10 {
		t.Fatalf("got %v, want HeaderTooLargeError", err)
	}
	reqs := e.hub.Requests("/cdn/")
	if last := reqs[len(reqs)-1].Range; last != "bytes=0-65535" {
		t.Fatalf("last range %q, want the limit", last)
	}
}

func TestGatedRepository(t *testing.T) {
	e := newEnv(t)
	e.hub.AddRepo("o/gated", "hf_secret", hubstandin.File{Path: "m-Q8_0.gguf", Local: stories, LFS: true})
	ref, _ := ParseRef("hf:o/gated")
	for _, tt := range []struct {
		name, token, want string
	}{
		{"no token", "", "set HF_TOKEN"},
		{"wrong token", "hf_wrong", "refused the token in HF_TOKEN"},
	} {
		_, err := e.client(t, func(c *Config) { c.Token = tt.token }).CardFor(t.Context(), ref, "")
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	c := e.client(t, func(c *Config) { c.Token = "hf_secret" })
	card, err := c.CardFor(t.Context(), ref, "")
	if err != nil {
		t.Fatal(err)
	}
	m := e.manager(t, c, nil)
	if _, err := m.Ensure(t.Context(), card, nil); err != nil {
		t.Fatalf("download with the token: %v", err)
	}
	for _, r := range e.hub.Requests("/o/gated/") {
		if r.Auth == "Bearer hf_secret" {
			return
		}
	}
	t.Fatal("the token was never sent")
}

func TestNotFound(t *testing.T) {
	e := newEnv(t)
	e.hub.AddRepo("o/r", "", hubstandin.File{Path: "m.gguf", Local: stories, LFS: true})
	c := e.client(t, nil)
	for _, ref := range []string{"hf:o/missing", "hf:o/r/other.gguf"} {
		r, _ := ParseRef(ref)
		if _, err := c.CardFor(t.Context(), r, ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

func addStories(t *testing.T, e *env, how string) catalog.Card {
	e.hub.AddRepo("o/stories", "", hubstandin.File{Path: "stories260K.gguf", Local: stories, LFS: how == "lfs"})
	ref, _ := ParseRef("hf:o/stories")
	card, err := e.client(t, nil).CardFor(t.Context(), ref, "stories")
	if err != nil {
		t.Fatal(err)
	}
	return card
}

func checkInstalled(t *testing.T, e *env, card catalog.Card) {
	t.Helper()
	in, err := e.store.Locate(card)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(in.Paths[0])
	want, _ := os.ReadFile(stories)
	if string(got) != string(want) {
		t.Fatal("installed bytes differ from the Hub's")
	}
}

func TestDownloadResumesAfterCut(t *testing.T) {
	for _, how := range []string{"lfs", "git"} { // LFS: SHA-256 via the CDN; git: blob id, served directly
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			card := addStories(t, e, how)
			e.hub.CutAfter(300000, 1)
			var mu sync.Mutex
			var last Progress
			in, err := e.manager(t, e.client(t, nil), nil).Ensure(t.Context(), card, func(p Progress) { mu.Lock(); last = p; mu.Unlock() })
			if err != nil {
				t.Fatal(err)
			}
			checkInstalled(t, e, card)
			var ranges []string
			path := "/cdn/"
			if how == "git" {
				path = "/o/stories/resolve/"
			}
			for _, r := range e.hub.Requests(path) {
				if r.Range != "" && !strings.HasPrefix(r.Range, "bytes=0-") {
					ranges = append(ranges, r.Range)
				}
			}
			if len(ranges) != 1 || ranges[0] != "bytes=300000-" {
				t.Fatalf("resume ranges %v", ranges)
			}
			if last.Done != last.Total || last.Total != 1185376 || len(in.Paths) != 1 {
				t.Fatalf("last progress %+v", last)
			}
		})
	}
}

func TestCorruptByteIsNeverPublished(t *testing.T) {
	e := newEnv(t)
	card := addStories(t, e, "lfs")
	e.hub.CorruptAt(700000)
	_, err := e.manager(t, e.client(t, nil), nil).Ensure(t.Context(), card, nil)
	var ie *IntegrityError
	if !errors.As(err, &ie) || !errors.Is(err, ErrIntegrity) {
		t.Fatalf("got %v, want an IntegrityError", err)
	}
	dir, _ := e.store.ArtifactDir(card)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a corrupt download was published at %s", dir)
	}
	partial, _ := e.store.PartialDir(card)
	if _, err := os.Stat(filepath.Join(partial, "stories260K.gguf")); !os.IsNotExist(err) {
		t.Fatal("the corrupt bytes were kept")
	}
	cat, _ := e.store.Catalog()
	if _, ok := cat.Get("stories"); ok {
		t.Fatal("a corrupt download entered the catalog")
	}
	// The next pull, with honest bytes, succeeds from scratch.
	e.hub.CorruptAt(-1)
	if _, err := e.manager(t, e.client(t, nil), nil).Ensure(t.Context(), card, nil); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, e, card)
}

// TestCancelThenRestartResumes cancels a download mid-file, keeps the
// partial file, and has a new manager (as after a restart) resume it.
func TestCancelThenRestartResumes(t *testing.T) {
	e := newEnv(t)
	card := addStories(t, e, "lfs")
	hold, arrived := make(chan struct{}), make(chan string, 4)
	e.hub.Hold(hold, 400000, arrived)
	ctx, cancel := context.WithCancel(t.Context())
	m1 := e.manager(t, e.client(t, nil), nil)
	partial, _ := e.store.PartialDir(card)
	go func() {
		<-arrived // the CDN sent 400000 bytes and holds the rest
		waitFor(t, func() bool {
			fi, err := os.Stat(filepath.Join(partial, "stories260K.gguf"))
			return err == nil && fi.Size() == 400000
		})
		cancel()
	}()
	_, err := m1.Ensure(ctx, card, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	m1.Close() // waits for the transfer goroutine
	fi, err := os.Stat(filepath.Join(partial, "stories260K.gguf"))
	if err != nil || fi.Size() != 400000 {
		t.Fatalf("the partial file was not kept: %v", err)
	}
	e.hub.Hold(nil, 0, nil)
	if _, err := e.manager(t, e.client(t, nil), nil).Ensure(t.Context(), card, nil); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, e, card)
	want := "bytes=" + itoa(fi.Size()) + "-"
	for _, r := range e.hub.Requests("/cdn/") {
		if r.Range == want {
			return
		}
	}
	t.Fatalf("no request resumed with %q: %+v", want, e.hub.Requests("/cdn/"))
}

// waitFor polls cond for up to ten seconds (the one polling helper).
func waitFor(t *testing.T, cond func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not reached in 10s")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestRacingRequestsShareOneTransfer(t *testing.T) {
	e := newEnv(t)
	card := addStories(t, e, "lfs")
	hold, arrived := make(chan struct{}), make(chan string, 4)
	e.hub.Hold(hold, 1000, arrived)
	m := e.manager(t, e.client(t, nil), func(c *ManagerConfig) { c.MaxConcurrent = 1 })
	before := len(e.hub.Requests("/cdn/")) // the header reads
	type result struct {
		in  catalog.Installation
		err error
	}
	res := make(chan result, 2)
	go func() { in, err := m.Ensure(t.Context(), card, nil); res <- result{in, err} }()
	<-arrived // the first caller's transfer reached the CDN
	joined := make(chan struct{})
	var once sync.Once
	go func() {
		in, err := m.Ensure(t.Context(), card, func(Progress) { once.Do(func() { close(joined) }) })
		res <- result{in, err}
	}()
	<-joined // the second caller joined the running transfer
	close(hold)
	a, b := <-res, <-res
	if a.err != nil || b.err != nil || a.in.Paths[0] != b.in.Paths[0] {
		t.Fatalf("results %+v %+v", a, b)
	}
	if n := len(e.hub.Requests("/cdn/")) - before; n != 1 {
		t.Fatalf("%d transfers, want 1", n)
	}
}

func TestDiskSpaceRefusal(t *testing.T) {
	e := newEnv(t)
	card := addStories(t, e, "lfs")
	before := len(e.hub.Requests("/cdn/"))
	_, err := e.manager(t, e.client(t, nil), func(c *ManagerConfig) { c.HeadroomBytes = 1 << 62 }).Ensure(t.Context(), card, nil)
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoSpace) || se.Need != 1185376 || !strings.Contains(err.Error(), "free disk space") ||
		se.HTTPStatus() != 507 {
		t.Fatalf("got %v", err)
	}
	if len(e.hub.Requests("/cdn/")) != before {
		t.Fatal("bytes were transferred before admission")
	}
}

func TestOffline(t *testing.T) {
	e := newEnv(t)
	card := addStories(t, e, "lfs")
	before := len(e.hub.Requests("/"))
	off := e.client(t, func(c *Config) { c.Offline = true })
	ref, _ := ParseRef("hf:o/stories")
	if _, err := off.CardFor(t.Context(), ref, ""); !errors.Is(err, ErrOffline) {
		t.Fatalf("add offline: %v", err)
	}
	if _, err := off.Search(t.Context(), "stories", 5); !errors.Is(err, ErrOffline) {
		t.Fatalf("search offline: %v", err)
	}
	moff := e.manager(t, off, nil)
	if _, err := moff.Ensure(t.Context(), card, nil); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "SKULK_OFFLINE") {
		t.Fatalf("download offline: %v", err)
	}
	if len(e.hub.Requests("/")) != before {
		t.Fatal("offline mode touched the network")
	}
	if _, err := e.manager(t, e.client(t, nil), nil).Ensure(t.Context(), card, nil); err != nil {
		t.Fatal(err)
	}
	before = len(e.hub.Requests("/"))
	if _, err := moff.Ensure(t.Context(), card, nil); err != nil {
		t.Fatalf("an installed model offline: %v", err)
	}
	if len(e.hub.Requests("/")) != before {
		t.Fatal("offline mode touched the network")
	}
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	e.hub.AddRepo("o/stories-GGUF", "", hubstandin.File{Path: "m.gguf", Local: stories, LFS: true})
	got, err := e.client(t, nil).Search(t.Context(), "stories", 5)
	if err != nil || len(got) != 1 || got[0].ID != "o/stories-GGUF" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestNewRefusesNonHTTPEndpoint(t *testing.T) {
	if _, err := New(Config{Endpoint: "ftp://x"}); err == nil {
		t.Fatal("a non-http endpoint was accepted")
	}
}
