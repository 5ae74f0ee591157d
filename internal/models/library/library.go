package library

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/models/hub"
	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Model catalog timings.
const (
	// catalogRescan is how often the catalog is rebuilt from disk, so cards
	// an operator edits by hand and files changed on disk are noticed.
	catalogRescan = 2 * time.Second
	// progressInterval throttles download progress readings (about 2/s).
	progressInterval = 500 * time.Millisecond
	// downloadKeyPrefix starts the telemetry key of a model's download.
	downloadKeyPrefix = "dl/"
)

// StoreConfig places the model directories under the node's home, unless
// the configuration (SKULK_MODELS_DIR, SKULK_CUSTOM_MODEL_CARDS_DIR) names
// others.
func StoreConfig(cfg config.Node) catalog.StoreConfig {
	sc := catalog.StoreConfig{ModelsDir: filepath.Join(cfg.Home, "models"), CustomDir: filepath.Join(cfg.Home, "custom_model_cards")}
	if cfg.ModelsDir != "" {
		sc.ModelsDir = cfg.ModelsDir
	}
	if cfg.CustomModelCardsDir != "" {
		sc.CustomDir = cfg.CustomModelCardsDir
	}
	return sc
}

// ImportDirs are the directories POST /models/import reads under: the
// operator's --import-dir list; else the models directory's import/
// (created, mode 0700) for every request, and the node user's home for
// requests from this machine, so `skulk models import ./file.gguf` works
// for the user who runs the node (unless that home is the root: a service
// account's home must not open the whole file system).
func ImportDirs(cfg config.Node, modelsDir string, log *slog.Logger) (dirs, loopback []string, err error) {
	if len(cfg.ImportDirs) > 0 {
		for _, d := range cfg.ImportDirs {
			a, err := filepath.Abs(d)
			if err != nil {
				return nil, nil, fmt.Errorf("node: --import-dir %q: %w", d, err)
			}
			if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
				log.Warn("an import directory is not a directory; nothing under it can be imported", "dir", a)
			}
			dirs = append(dirs, a)
		}
		return dirs, nil, nil
	}
	modelsDir, err = filepath.Abs(modelsDir)
	if err != nil {
		return nil, nil, fmt.Errorf("node: the models directory: %w", err)
	}
	d := filepath.Join(modelsDir, "import")
	if err := os.MkdirAll(modelsDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("node: create the models directory (set SKULK_MODELS_DIR to another): %w", err)
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, nil, fmt.Errorf("node: create the import directory (or name others with --import-dir): %w", err)
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		if real, err := filepath.EvalSymlinks(home); err == nil && real != "/" {
			loopback = []string{home}
		}
	}
	return []string{d}, loopback, nil
}

// Library owns the node's catalog (rebuilt from the store when cards change)
// and its downloads: it resolves a placed model to local weights, publishes
// download progress as telemetry and reports terminal download outcomes.
type Library struct {
	// immutable after New
	node  ids.NodeID
	store *catalog.Store
	hub   *hub.Client
	mgr   *hub.Manager
	log   *slog.Logger
	meter DownloadMeter
	ctx   context.Context // lifetime of background pulls, cancelled by close
	stop  context.CancelFunc
	wg    sync.WaitGroup

	cat atomic.Pointer[catalog.Catalog] // this node's own catalog; reads never write
	// applied is the control plane's applied State, once it exists: its
	// replicated cards join the catalog behind the node's own.
	applied  atomic.Pointer[func() state.State]
	merged   atomic.Pointer[mergedCatalog] // the last catalog with the replicated cards
	publish  atomic.Pointer[func(key string, value []byte) error]
	report   atomic.Pointer[func(ctx context.Context, ev event.Event) error]
	peer     atomic.Pointer[peerFetch] // set once the cluster is up
	rebuilds sync.Mutex                // serializes rebuilds; guards lastErrs
	lastErrs string

	mu        sync.Mutex                            // guards the fields below
	downloads map[string]*modeladmin.DownloadStatus // by model id
	active    map[string]int                        // callers waiting per model
	published map[string]time.Time                  // last progress reading per model
	onDisk    map[string]int64                      // bytes on disk at the last progress reading, per model downloading
}

// DownloadMeter counts the node's downloads (the node's metrics).
type DownloadMeter interface {
	DownloadBytes(model string, n int64)
	DownloadFailed(model string)
}

// New opens the store and the Hub client, builds the first catalog
// (logging artifacts that fail verification) and starts nothing.
func New(cfg config.Node, node ids.NodeID, meter DownloadMeter, log *slog.Logger) (*Library, error) {
	hcfg := hub.Config{Endpoint: cfg.HubEndpoint, Token: cfg.HFToken, Offline: cfg.Offline}
	client, err := hub.New(hcfg)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	store := catalog.NewStore(StoreConfig(cfg))
	mgr, err := hub.NewManager(hub.ManagerConfig{Client: client, Store: store, Logger: log})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	m := &Library{node: node, store: store, hub: client, mgr: mgr, log: log, meter: meter, ctx: ctx, stop: stop,
		downloads: map[string]*modeladmin.DownloadStatus{}, active: map[string]int{}, published: map[string]time.Time{}, onDisk: map[string]int64{}}
	m.Refresh()
	if hcfg.Offline {
		log.Info("offline mode: the Hub is never contacted; installed and custom models still serve")
	}
	return m, nil
}

// mergedCatalog is the node's catalog with the cards of the State at
// index behind it.
type mergedCatalog struct {
	local *catalog.Catalog
	index ids.Index
	cat   *catalog.Catalog
}

// Catalog returns the current catalog: this node's own cards (custom,
// installed, built-in), then the cluster's replicated cards under the ids
// it lacks, so a model added or imported on any node is known here as
// soon as this node applied it. The merge is redone only when either side
// changed.
func (m *Library) Catalog() *catalog.Catalog {
	local := m.cat.Load()
	get := m.applied.Load()
	if get == nil {
		return local
	}
	st := (*get)()
	if len(st.Models) == 0 {
		return local
	}
	if c := m.merged.Load(); c != nil && c.local == local && c.index == st.LastIndex {
		return c.cat
	}
	cards := make(catalog.Replicated, 0, len(st.Models))
	for _, id := range slices.Sorted(maps.Keys(st.Models)) {
		cards = append(cards, st.Models[id])
	}
	cat, errs := local.Behind(cards)
	for _, err := range errs {
		m.log.Debug("a replicated card is not served", "err", err)
	}
	m.merged.Store(&mergedCatalog{local: local, index: st.LastIndex, cat: cat})
	return cat
}

// AttachState lets the catalog read the replicated cards.
func (m *Library) AttachState(applied func() state.State) { m.applied.Store(&applied) }

// Card looks a model up in the current catalog.
func (m *Library) Card(id ids.ModelID) (catalog.Card, bool) { return m.Catalog().Get(string(id)) }

// Refresh rebuilds the catalog now and logs what it had to skip when that
// changed since the last rebuild.
func (m *Library) Refresh() {
	m.rebuilds.Lock()
	defer m.rebuilds.Unlock()
	cat, errs := m.store.Catalog()
	m.cat.Store(cat)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	sort.Strings(msgs)
	joined := strings.Join(msgs, "\n")
	if joined == m.lastErrs {
		return
	}
	m.lastErrs = joined
	for _, e := range errs {
		for _, one := range unjoin(e) {
			if nie := (*catalog.NotInstalledError)(nil); errors.As(one, &nie) {
				m.log.Warn("model is not installed", "model", nie.ID, "dir", nie.Dir, "reason", nie.Reason)
				continue
			}
			m.log.Warn("catalog", "err", one)
		}
	}
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// Rescan rebuilds the catalog every catalogRescan until ctx ends.
func (m *Library) Rescan(ctx context.Context) {
	t := time.NewTicker(catalogRescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Refresh()
		}
	}
}

// Attach connects the cluster plumbing once it exists: telemetry
// publication and the worker's report path to the master.
func (m *Library) Attach(publish func(string, []byte) error, report func(context.Context, event.Event) error) {
	m.publish.Store(&publish)
	m.report.Store(&report)
}

// Close cancels background pulls, waits for them and closes the download
// manager (partial files stay for a later resume).
func (m *Library) Close() {
	m.stop()
	m.wg.Wait()
	m.mgr.Close()
}

// Weights are a model's local files as a runner loads them.
type Weights struct {
	Path         string
	ChatTemplate string
	// Speculative, when set, is how the runner drafts tokens.
	Speculative *Speculation
}

// Speculation is a model's speculative decoding: with a draft model's
// file, or by prompt lookup (Lookup).
type Speculation struct {
	Lookup    bool
	DraftPath string
	DraftMax  int
}

// resolve is the model's verified local weights, downloaded first when
// needed.
func (m *Library) resolve(ctx context.Context, model ids.ModelID, downloading func()) (Weights, error) {
	card, path, err := m.weights(ctx, model, downloading)
	if err != nil {
		return Weights{}, err
	}
	wm := Weights{Path: path, ChatTemplate: card.ChatTemplate}
	rt := card.Runtime
	switch {
	case rt.DraftModel != "":
		// The draft's weights are made local like the model's; the runner
		// checks at load that it shares the model's vocabulary.
		_, draft, err := m.weights(ctx, ids.ModelID(rt.DraftModel), downloading)
		if err != nil {
			return Weights{}, fmt.Errorf("model %s: draft model: %w", model, err)
		}
		wm.Speculative = &Speculation{DraftPath: draft, DraftMax: rt.DraftMax}
	case rt.Speculative == catalog.SpeculativeLookup:
		wm.Speculative = &Speculation{Lookup: true, DraftMax: rt.DraftMax}
	}
	return wm, nil
}

// weights makes a model's weights local and returns its card and file.
func (m *Library) weights(ctx context.Context, model ids.ModelID, downloading func()) (catalog.Card, string, error) {
	card, ok := m.Card(model)
	if !ok {
		return catalog.Card{}, "", fmt.Errorf("model %s is not in this node's catalog (add it on any node: skulk models add)", model)
	}
	in, err := m.ensure(ctx, card, downloading)
	if err != nil {
		return catalog.Card{}, "", err
	}
	if len(in.Paths) == 0 {
		return catalog.Card{}, "", fmt.Errorf("model %s: the installation in %s lists no files", model, in.Dir)
	}
	return card, in.Paths[0], nil
}

// Start begins the download of card in the background (modeladmin.Downloads).
func (m *Library) Start(card catalog.Card) {
	m.mu.Lock()
	running := m.active[card.ID] > 0
	m.mu.Unlock()
	if running {
		return
	}
	m.wg.Go(func() {
		if _, err := m.ensure(m.ctx, card, nil); err != nil && m.ctx.Err() == nil {
			m.log.Warn("pull failed", "model", card.ID, "err", err)
		}
	})
}

// Status returns the latest download of a model (modeladmin.Downloads).
func (m *Library) Status(model string) (modeladmin.DownloadStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.downloads[model]
	if !ok {
		return modeladmin.DownloadStatus{}, false
	}
	return *d, true
}

// ensure returns card's verified installation, downloading it when needed,
// with progress published as telemetry and the outcome reported to the
// master (DownloadCompleted, DownloadFailed).
func (m *Library) ensure(ctx context.Context, card catalog.Card, downloading func()) (catalog.Installation, error) {
	if card.Builtin {
		return m.mgr.Ensure(ctx, card, nil)
	}
	if in, err := m.store.Locate(card); err == nil {
		return in, nil
	}
	if downloading != nil {
		downloading()
	}
	m.mu.Lock()
	m.active[card.ID]++
	if m.active[card.ID] == 1 {
		m.downloads[card.ID] = &modeladmin.DownloadStatus{State: modeladmin.DownloadRunning, TotalBytes: card.StorageBytes}
	}
	m.mu.Unlock()
	in, err := m.mgr.Ensure(ctx, card, func(p hub.Progress) { m.progress(card.ID, p) })
	m.mu.Lock()
	m.active[card.ID]--
	last := m.active[card.ID] == 0
	if last {
		delete(m.active, card.ID)
		delete(m.onDisk, card.ID)
	}
	d := m.downloads[card.ID]
	failed := false // counted once, by the last caller waiting on the transfer
	switch {
	case err == nil:
		d.State, d.Error = modeladmin.DownloadDone, ""
		d.DoneBytes = max(d.DoneBytes, d.TotalBytes)
	case ctx.Err() != nil && !last:
		// another caller still waits for the transfer
	case ctx.Err() != nil:
		d.State, d.Error = modeladmin.DownloadStopped, "cancelled; a later pull or placement resumes it"
	default:
		d.State, d.Error = modeladmin.DownloadFailed, err.Error()
		failed = last
	}
	final := *d
	m.mu.Unlock()
	if failed {
		m.meter.DownloadFailed(card.ID)
	}
	if ctx.Err() != nil && err != nil {
		return in, err
	}
	m.publishDownload(card.ID, final)
	if err != nil {
		m.reportEvent(event.DownloadFailed{Node: m.node, Model: ids.ModelID(card.ID), Reason: truncateReason(err.Error())})
		return in, err
	}
	m.reportEvent(event.DownloadCompleted{Node: m.node, Model: ids.ModelID(card.ID), Bytes: uint64(max(final.TotalBytes, 0))})
	m.Refresh() // the download's installed card joins the catalog
	return in, nil
}

// Executor decides commands: the control plane.
type Executor interface {
	Execute(context.Context, event.Command) ([]event.IndexedEvent, error)
}

// Share commits a card added or imported here to the cluster's catalog
// (modeladmin's Share); newID names the command.
func Share(ctl Executor, newID func() string) func(context.Context, catalog.Card) error {
	return func(ctx context.Context, card catalog.Card) error {
		_, err := ctl.Execute(ctx, event.AddModel{ID: ids.CommandID(newID()), Card: card.Wire()})
		return err
	}
}

// Unshare takes a model out of the cluster's catalog when the State holds
// it (modeladmin's Unshare); newID names the command.
func Unshare(ctl interface {
	Executor
	State(context.Context) (state.State, error)
}, newID func() string) func(context.Context, ids.ModelID) (bool, error) {
	return func(ctx context.Context, id ids.ModelID) (bool, error) {
		st, err := ctl.State(ctx)
		if err != nil {
			return false, err
		}
		if _, ok := st.Models[id]; !ok {
			return false, nil
		}
		if _, err := ctl.Execute(ctx, event.RemoveModel{ID: ids.CommandID(newID()), Model: id}); err != nil {
			return false, err
		}
		return true, nil
	}
}

// progress records a transfer's progress and publishes it, throttled.
func (m *Library) progress(model string, p hub.Progress) {
	m.mu.Lock()
	d := m.downloads[model]
	if d == nil {
		m.mu.Unlock()
		return
	}
	d.File, d.DoneBytes, d.TotalBytes = p.File, p.Done, p.Total
	// The first reading of a transfer counts what was on disk already (a
	// resumed download); every caller waiting on the transfer hears each
	// reading, so only growth past the highest seen is downloaded bytes.
	var grown int64
	if prev, ok := m.onDisk[model]; !ok || p.Done > prev {
		if ok {
			grown = p.Done - prev
		}
		m.onDisk[model] = p.Done
	}
	now := time.Now()
	due := now.Sub(m.published[model]) >= progressInterval || p.Done >= p.Total
	if due {
		m.published[model] = now
	}
	snap := *d
	m.mu.Unlock()
	m.meter.DownloadBytes(model, grown)
	if due {
		m.publishDownload(model, snap)
	}
}

// downloadReading is the telemetry value of a model's download.
type downloadReading struct {
	Model string `json:"model"`
	modeladmin.DownloadStatus
}

// publishDownload gossips a model's download state as telemetry.
func (m *Library) publishDownload(model string, d modeladmin.DownloadStatus) {
	pub := m.publish.Load()
	if pub == nil {
		return
	}
	d.File = truncateTo(d.File, 96)
	d.Error = truncateTo(d.Error, 160)
	b, err := json.Marshal(downloadReading{Model: model, DownloadStatus: d})
	if err == nil {
		err = (*pub)(downloadKey(model), b)
	}
	if err != nil {
		m.log.Debug("cannot publish download progress", "model", model, "err", err)
	}
}

// downloadKey is the telemetry key of a model's download: "dl/<model>", or
// a digest of the id when that would exceed the key limit.
func downloadKey(model string) string {
	if k := downloadKeyPrefix + model; len(k) <= 64 {
		return k
	}
	s := sha256.Sum256([]byte(model))
	return downloadKeyPrefix + "sha256:" + hex.EncodeToString(s[:16])
}

func (m *Library) reportEvent(ev event.Event) {
	rep := m.report.Load()
	if rep == nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	if err := (*rep)(ctx, ev); err != nil {
		m.log.Debug("download outcome not admitted", "kind", ev.Kind(), "err", err)
	}
}

// ClusterDownloads reads every node's download readings from the
// membership's telemetry (m, nil before it is up), by model then node.
func ClusterDownloads(m func() *membership.Membership) func() map[string]map[ids.NodeID]modeladmin.DownloadStatus {
	return func() map[string]map[ids.NodeID]modeladmin.DownloadStatus {
		mem := m()
		if mem == nil {
			return nil
		}
		out := map[string]map[ids.NodeID]modeladmin.DownloadStatus{}
		for _, r := range mem.Readings() {
			if !strings.HasPrefix(r.Key, downloadKeyPrefix) {
				continue
			}
			var d downloadReading
			if err := json.Unmarshal(r.Value, &d); err != nil || d.Model == "" {
				continue
			}
			if out[d.Model] == nil {
				out[d.Model] = map[ids.NodeID]modeladmin.DownloadStatus{}
			}
			out[d.Model][r.Node] = d.DownloadStatus
		}
		return out
	}
}

func truncateReason(s string) string { return truncateTo(s, event.MaxReasonBytes) }

func truncateTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Store is the node's model store.
func (m *Library) Store() *catalog.Store { return m.store }

// Hub is the node's Hub client.
func (m *Library) Hub() *hub.Client { return m.hub }
