package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/platform/vfs"
)

// Download defaults.
const (
	DefaultHeadroom      = 10 << 30 // bytes left free on the models file system
	DefaultMaxConcurrent = 2
	DefaultRetries       = 3
	DefaultRetryDelay    = 2 * time.Second
	progressStep         = 128 << 10 // report every 128 KiB: a progress bar moves for small files too
)

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Client *Client
	Store  *catalog.Store
	// HeadroomBytes must stay free after a download (0: DefaultHeadroom).
	HeadroomBytes int64
	// MaxConcurrent bounds transfers in flight (0: DefaultMaxConcurrent).
	MaxConcurrent int
	// Retries is how often a file transfer resumes after a network failure
	// (0: DefaultRetries; negative: none); RetryDelay waits between tries.
	Retries    int
	RetryDelay time.Duration
	Logger     *slog.Logger
}

// Progress is one download's state, reported through Ensure's callback.
type Progress struct {
	Model string
	File  string // the file being transferred
	Done  int64  // bytes on disk, all files
	Total int64  // bytes of all files
}

// Manager downloads cards' artifacts into the store: one transfer per
// artifact however many callers ask, at most MaxConcurrent at once,
// resumable, verified and published atomically. Close cancels and waits
// for every transfer. Safe for concurrent use.
type Manager struct {
	cfg  ManagerConfig // immutable
	sem  chan struct{}
	ctx  context.Context // the manager's lifetime, cancelled by Close
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	transfers map[string]*transfer // by artifact directory; guarded by mu
	reserved  int64                // bytes admitted but not yet written; guarded by mu
	closed    bool                 // guarded by mu
}

// transfer is one artifact's download, shared by every caller that waits.
type transfer struct {
	key    string
	ctx    context.Context
	cancel context.CancelFunc
	prev   *transfer     // an ending transfer of the same key to wait for
	done   chan struct{} // closed when inst and err are set

	inst catalog.Installation
	err  error

	// guarded by Manager.mu
	refs   int
	nextID int
	subs   map[int]func(Progress)
	last   Progress
}

// NewManager returns a manager; call Close when done.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Client == nil || cfg.Store == nil {
		return nil, errors.New("hub: a download manager needs a client and a store")
	}
	if cfg.HeadroomBytes <= 0 {
		cfg.HeadroomBytes = DefaultHeadroom
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, sem: make(chan struct{}, cfg.MaxConcurrent), ctx: ctx, stop: stop, transfers: map[string]*transfer{}}, nil
}

// Close cancels every transfer (their partial files stay for a later
// resume) and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
	return nil
}

// Ensure returns the verified local installation of card, downloading it
// first when needed. Concurrent calls for the same artifact share one
// transfer; progress (may be nil) is called from the transfer's goroutine
// and must not block. When ctx ends, Ensure returns ctx.Err(); the transfer
// goes on while another caller waits for it, and otherwise stops, keeping
// its partial files for the next Ensure (in this process or a later one).
func (m *Manager) Ensure(ctx context.Context, card catalog.Card, progress func(Progress)) (catalog.Installation, error) {
	if card.Builtin {
		p, err := catalog.MaterializeBuiltin(m.cfg.Store.Config().ModelsDir)
		if err != nil {
			return catalog.Installation{}, err
		}
		return catalog.Installation{Card: card, Dir: filepath.Dir(p), Paths: []string{p}, Installed: true}, nil
	}
	if in, err := m.cfg.Store.Locate(card); err == nil {
		return in, nil
	} else if nie := (*catalog.NotInstalledError)(nil); !errors.As(err, &nie) {
		return catalog.Installation{}, err
	}
	if card.Repo == "" {
		return catalog.Installation{}, fmt.Errorf("hub: model %s has no source repository to download from; import its file again (skulk models import)", card.ID)
	}
	if m.cfg.Client.Offline() {
		return catalog.Installation{}, &OfflineError{Op: "downloading " + card.ID}
	}
	t, id, last, err := m.join(card, progress)
	if err != nil {
		return catalog.Installation{}, err
	}
	if progress != nil && last.Total > 0 {
		progress(last)
	}
	select {
	case <-t.done:
		return t.inst, t.err
	case <-ctx.Done():
		m.leave(t, id)
		return catalog.Installation{}, ctx.Err()
	}
}

// join adds a waiter to the artifact's transfer, starting one if needed.
func (m *Manager) join(card catalog.Card, progress func(Progress)) (*transfer, int, Progress, error) {
	key, err := m.cfg.Store.ArtifactDir(card)
	if err != nil {
		return nil, 0, Progress{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, 0, Progress{}, errors.New("hub: the download manager is closed")
	}
	t := m.transfers[key]
	if t == nil || t.ctx.Err() != nil { // none, or one that is stopping: queue behind it
		ctx, cancel := context.WithCancel(m.ctx)
		t = &transfer{key: key, ctx: ctx, cancel: cancel, prev: t, done: make(chan struct{}), subs: map[int]func(Progress){}}
		m.transfers[key] = t
		m.wg.Add(1)
		go m.run(t, card)
	}
	t.refs++
	t.nextID++
	if progress != nil {
		t.subs[t.nextID] = progress
	}
	return t, t.nextID, t.last, nil
}

// leave removes a waiter; the last one to leave stops the transfer.
func (m *Manager) leave(t *transfer, id int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(t.subs, id)
	t.refs--
	if t.refs == 0 {
		t.cancel()
	}
}

func (m *Manager) report(t *transfer, p Progress) {
	m.mu.Lock()
	t.last = p
	subs := make([]func(Progress), 0, len(t.subs))
	for _, f := range t.subs {
		subs = append(subs, f)
	}
	m.mu.Unlock()
	for _, f := range subs {
		f(p)
	}
}

func (m *Manager) run(t *transfer, card catalog.Card) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		if m.transfers[t.key] == t {
			delete(m.transfers, t.key)
		}
		m.mu.Unlock()
		t.cancel()
		close(t.done)
	}()
	if t.prev != nil {
		<-t.prev.done // never two transfers on one partial directory
	}
	select {
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-t.ctx.Done():
		t.err = t.ctx.Err()
		return
	}
	// A failure is its callers' to report (once: skulk pull's, or the
	// placement's runner).
	t.inst, t.err = m.download(t.ctx, card, func(p Progress) { m.report(t, p) })
}

// fileJob is one file to fetch and what the Hub says it must be.
type fileJob struct {
	name string
	info RepoFile
	dst  string
	have int64
}

func (m *Manager) download(ctx context.Context, card catalog.Card, report func(Progress)) (catalog.Installation, error) {
	if in, err := m.cfg.Store.Locate(card); err == nil { // a transfer we queued behind may have finished it
		return in, nil
	}
	info, err := m.cfg.Client.Repo(ctx, card.Repo, card.Revision)
	if err != nil {
		return catalog.Installation{}, err
	}
	partial, err := m.cfg.Store.PartialDir(card)
	if err != nil {
		return catalog.Installation{}, err
	}
	what := "the download of model " + card.ID
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return catalog.Installation{}, fmt.Errorf("hub: %w", vfs.NoSpace(err, partial, what))
	}
	var jobs []fileJob
	var total, have int64
	for _, name := range card.Files {
		rf, ok := info.File(name)
		if !ok {
			return catalog.Installation{}, fmt.Errorf("hub: %s at %s has no file %s: %w", card.Repo, card.Revision, name, ErrNotFound)
		}
		if rf.SHA256 == "" && rf.BlobID == "" {
			return catalog.Installation{}, &IntegrityError{Repo: card.Repo, File: name, Detail: "the Hub lists no checksum for it, so it cannot be verified"}
		}
		j := fileJob{name: name, info: rf, dst: filepath.Join(partial, filepath.FromSlash(name))}
		if fi, err := os.Stat(j.dst); err == nil && fi.Size() <= rf.Size {
			j.have = fi.Size()
		}
		jobs = append(jobs, j)
		total += rf.Size
		have += j.have
	}
	release, err := m.admit(card.ID, total-have)
	if err != nil {
		return catalog.Installation{}, err
	}
	defer release()
	what = fmt.Sprintf("the download of model %s (%d bytes)", card.ID, total)
	done := have
	report(Progress{Model: card.ID, Done: done, Total: total})
	sums := map[string]string{}
	for _, j := range jobs {
		sum, err := m.fetch(ctx, card, j, func(n int64) {
			done += n
			report(Progress{Model: card.ID, File: j.name, Done: done, Total: total})
		})
		if err != nil {
			return catalog.Installation{}, vfs.NoSpace(err, partial, what)
		}
		sums[j.name] = sum
	}
	in, err := m.cfg.Store.Publish(card, partial, sums)
	return in, vfs.NoSpace(err, partial, what)
}

// admit reserves need bytes on the models file system, or refuses with a
// *SpaceError when that would leave less than the headroom free.
func (m *Manager) admit(model string, need int64) (func(), error) {
	dir := m.cfg.Store.Config().ModelsDir
	free, err := freeBytes(dir)
	if err != nil {
		return nil, fmt.Errorf("hub: cannot read free space of %s: %w", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	avail := free - m.reserved
	if need > math.MaxInt64-m.cfg.HeadroomBytes || avail < need+m.cfg.HeadroomBytes {
		return nil, &SpaceError{Model: model, Dir: dir, Need: need, Free: avail, Headroom: m.cfg.HeadroomBytes}
	}
	m.reserved += need
	return func() {
		m.mu.Lock()
		m.reserved -= need
		m.mu.Unlock()
	}, nil
}

// fetch brings one file to its full size and verifies it, resuming after
// network failures; it returns the file's SHA-256.
func (m *Manager) fetch(ctx context.Context, card catalog.Card, j fileJob, advance func(int64)) (string, error) {
	for attempt := 0; ; attempt++ {
		sum, err := m.fetchOnce(ctx, card, j, advance)
		if err == nil || ctx.Err() != nil || !retryable(err) || attempt >= m.cfg.Retries {
			return sum, err
		}
		m.cfg.Logger.Info("download interrupted; resuming", "model", card.ID, "file", j.name, "attempt", attempt+1, "err", err)
		timer := time.NewTimer(m.cfg.RetryDelay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return "", ctx.Err()
		}
	}
}

// retryable reports failures that a resumed request may get past.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 || se.Code == http.StatusRequestedRangeNotSatisfiable || se.Code == http.StatusTooManyRequests
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || errors.Is(err, errShortBody)
}

var errShortBody = errors.New("the response ended early")

// fetchOnce makes one request for the rest of a file. The bytes already on
// disk are hashed first, so the final hash covers the whole file.
func (m *Manager) fetchOnce(ctx context.Context, card catalog.Card, j fileJob, advance func(int64)) (string, error) {
	if err := os.MkdirAll(filepath.Dir(j.dst), 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(j.dst, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	have := fi.Size()
	if have > j.info.Size {
		if err := f.Truncate(0); err != nil {
			return "", err
		}
		have = 0
	}
	sha, blob := sha256.New(), sha1.New()
	restart := func() error {
		sha.Reset()
		blob.Reset()
		fmt.Fprintf(blob, "blob %d\x00", j.info.Size)
		have = 0
		_, err := f.Seek(0, io.SeekStart)
		if err == nil {
			err = f.Truncate(0)
		}
		return err
	}
	fmt.Fprintf(blob, "blob %d\x00", j.info.Size)
	if _, err := io.CopyN(io.MultiWriter(sha, blob), f, have); err != nil {
		return "", fmt.Errorf("hub: read partial %s: %w", j.dst, err)
	}
	if have < j.info.Size {
		if err := m.transfer(ctx, card, j, f, &have, sha, blob, restart, advance); err != nil {
			return "", err
		}
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	got := hex.EncodeToString(sha.Sum(nil))
	gotBlob := hex.EncodeToString(blob.Sum(nil))
	switch {
	case j.info.SHA256 != "" && got != j.info.SHA256:
		os.Remove(j.dst)
		return "", &IntegrityError{Repo: card.Repo, File: j.name, Want: j.info.SHA256, Got: got}
	case j.info.SHA256 == "" && gotBlob != j.info.BlobID:
		os.Remove(j.dst)
		return "", &IntegrityError{Repo: card.Repo, File: j.name, Want: "git blob " + j.info.BlobID, Got: "git blob " + gotBlob}
	}
	return got, nil
}

// transfer requests bytes [have, size) and appends them to f.
func (m *Manager) transfer(ctx context.Context, card catalog.Card, j fileJob, f *os.File, have *int64, sha, blob hash.Hash, restart func() error, advance func(int64)) error {
	resp, hh, err := m.cfg.Client.openFile(ctx, card.Repo, card.Revision, j.name, *have, -1)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, _, size, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || start != *have || (size >= 0 && size != j.info.Size) {
			return &IntegrityError{Repo: card.Repo, File: j.name, Detail: fmt.Sprintf("asked for bytes from %d of %d, got Content-Range %q", *have, j.info.Size, resp.Header.Get("Content-Range"))}
		}
	case http.StatusOK: // a full body: the server ignored Range
		if *have > 0 {
			advance(-*have)
			if err := restart(); err != nil {
				return err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		advance(-*have)
		if err := restart(); err != nil {
			return err
		}
		return m.cfg.Client.statusError("download", card.Repo, m.cfg.Client.fileURL(card.Repo, card.Revision, j.name), resp)
	default:
		return m.cfg.Client.statusError("download", card.Repo, m.cfg.Client.fileURL(card.Repo, card.Revision, j.name), resp)
	}
	if hh.commit != "" && hh.commit != card.Revision {
		return &IntegrityError{Repo: card.Repo, File: j.name, Detail: fmt.Sprintf("asked for commit %s, the Hub served %s", card.Revision, hh.commit)}
	}
	if j.info.SHA256 != "" && hh.linkedETag != "" && hh.linkedETag != j.info.SHA256 {
		return &IntegrityError{Repo: card.Repo, File: j.name, Detail: fmt.Sprintf("the Hub's ETag %s disagrees with its listing's sha256 %s", hh.linkedETag, j.info.SHA256)}
	}
	if _, err := f.Seek(*have, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	var pending int64
	body := io.LimitReader(resp.Body, j.info.Size-*have+1) // one byte more detects an overlong body
	for *have < j.info.Size {
		n, rerr := body.Read(buf)
		if n > 0 {
			if *have+int64(n) > j.info.Size {
				return &IntegrityError{Repo: card.Repo, File: j.name, Detail: fmt.Sprintf("the Hub sent more than the listed %d bytes", j.info.Size)}
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return fmt.Errorf("hub: write %s: %w", j.dst, err)
			}
			sha.Write(buf[:n])
			blob.Write(buf[:n])
			*have += int64(n)
			if pending += int64(n); pending >= progressStep {
				advance(pending)
				pending = 0
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			advance(pending)
			return fmt.Errorf("hub: download %s/%s at byte %d: %w", card.Repo, j.name, *have, rerr)
		}
	}
	advance(pending)
	if *have < j.info.Size {
		return fmt.Errorf("hub: download %s/%s: %w at byte %d of %d", card.Repo, j.name, errShortBody, *have, j.info.Size)
	}
	return nil
}
