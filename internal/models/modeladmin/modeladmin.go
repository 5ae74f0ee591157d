// Package modeladmin manages a node's model catalog for the HTTP API's
// /models routes: it adds cards from the Hub, imports GGUF files from the
// node's machine (only under its import directories) or uploaded by a
// client (resumable, verified by SHA-256: upload.go), starts downloads,
// removes cards and weights, sizes models, searches the Hub, and lists the
// catalog with each model's placement and this node's copy of its weights.
//
// A Service is safe for concurrent use; one mutex serializes the catalog
// changes. It implements the API's ModelAdmin (and the Catalog of its
// Backend) with the request types of package admin, without importing the
// API: the node wires it in. Only the node (and tests) should import it.
package modeladmin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/models/hub"
	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/vfs"
)

// Downloads is this node's download tracker as model management uses it.
type Downloads interface {
	// Start begins (or joins) the download of card's weights in the
	// background; it returns at once.
	Start(card catalog.Card)
	// Status is the latest download of a model on this node, if any.
	Status(model string) (DownloadStatus, bool)
}

// DownloadStatus is one model's download on this node.
type DownloadStatus struct {
	State      string `json:"state"` // downloading, done, failed or stopped
	File       string `json:"file,omitempty"`
	DoneBytes  int64  `json:"done_bytes"`
	TotalBytes int64  `json:"total_bytes"`
	Error      string `json:"error,omitempty"`
}

// Download states.
const (
	DownloadRunning = "downloading"
	DownloadDone    = "done"
	DownloadFailed  = "failed"
	DownloadStopped = "stopped"
)

// Cluster is the replicated State as model administration reads it.
type Cluster interface {
	State(ctx context.Context) (state.State, error)
}

// Config wires the model management of a node.
type Config struct {
	Cluster Cluster // which instances use each model
	Store   *catalog.Store
	Hub     *hub.Client
	// Catalog returns the current catalog; Refresh rebuilds it now, after
	// the cards on disk changed.
	Catalog func() *catalog.Catalog
	Refresh func()
	// Imported, when set, hears of each model imported here, so the State
	// can say this node has it (members fetch stages' tensors from it).
	Imported func(card catalog.Card)
	// FilesRemoved, when set, hears of each model whose weights were
	// removed here, so the State stops naming this node as a holder.
	FilesRemoved func(id ids.ModelID)
	// Share makes a card added or imported here part of the cluster's
	// catalog (event.AddModel), and Unshare takes a model out of it
	// (event.RemoveModel; false when the cluster's catalog does not hold
	// it). Each returns once the decision is committed, so an answer of 2xx
	// means every node knows. Nil keeps the catalog this node's alone.
	Share     func(ctx context.Context, card catalog.Card) error
	Unshare   func(ctx context.Context, id ids.ModelID) (bool, error)
	Downloads Downloads
	// ClusterDownloads returns the download readings every node gossips
	// (telemetry), by model id then node; nil when there is no cluster.
	ClusterDownloads func() map[string]map[ids.NodeID]DownloadStatus
	// ImportDirs are the directories POST /models/import reads under;
	// LoopbackImportDirs are added for requests from loopback. With neither,
	// nothing can be imported.
	ImportDirs, LoopbackImportDirs []string
	// Library is the short names adds, pulls and requests may use
	// (shortname.Builtin in a node; tests may pass another).
	Library shortname.Library
	// MaxUploadBytes bounds a file uploaded by PUT /models/upload (0: only
	// the free space of the models disk does); UploadStaleAfter is how long
	// a partial upload nobody writes stays (0: DefaultUploadStaleAfter).
	MaxUploadBytes   int64
	UploadStaleAfter time.Duration
}

// Service manages the model catalog over a node's store, the Hub and its
// downloads, and lists it (GET /models) with each model's local
// installation.
type Service struct {
	cfg Config // immutable

	mu sync.Mutex // serializes catalog mutations (add, import, remove)

	upMu      sync.Mutex      // guards uploading
	uploading map[string]bool // the SHA-256s of the uploads running
}

// New returns the model management service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// Error is a model-management failure with the HTTP status it maps to.
type Error struct {
	Status int
	Msg    string
	Err    error // the cause, if any
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) Unwrap() error   { return e.Err }
func (e *Error) HTTPStatus() int { return e.Status }

func modelErrorf(status int, err error, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...), Err: err}
}

// hubError maps a Hub failure to its status: offline 503, gated 502 (the
// Hub's refusal of this node, never the API's 401/403), missing 404, a full disk 507, unreachable 503, another Hub status 502, and anything else
// (a file that is not a model this node can serve) 400.
func hubError(what string, err error) error {
	var se *hub.StatusError
	var ue *url.Error
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, hub.ErrOffline):
		return modelErrorf(http.StatusServiceUnavailable, err, "%s: %v", what, err)
	case errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden):
		// The Hub refused this node, not the client this node: a 401 here
		// would read as the cluster's own API key missing.
		return modelErrorf(http.StatusBadGateway, err, "%s: %v", what, err)
	case errors.Is(err, hub.ErrNotFound):
		return modelErrorf(http.StatusNotFound, err, "%s: %v", what, err)
	case errors.As(err, &se):
		return modelErrorf(http.StatusBadGateway, err, "%s: %v", what, err)
	case errors.Is(err, hub.ErrNoSpace) || vfs.IsNoSpace(err):
		return modelErrorf(http.StatusInsufficientStorage, err, "%s: %v", what, err)
	case errors.As(err, &ue) || errors.As(err, &ne):
		return modelErrorf(http.StatusServiceUnavailable, err, "%s: cannot reach the Hub (%v); check the network or HF_ENDPOINT, or run offline with installed models", what, err)
	}
	return modelErrorf(http.StatusBadRequest, err, "%s: %v", what, err)
}

// AddModel resolves a Hub reference, or a name of the library
// (qwen3:8b), to a pinned card and stores it as a custom card. A library
// name is the card's id unless the request names another. An id that is
// already in the catalog is refused (409).
func (m *Service) AddModel(ctx context.Context, req AddModelRequest) (any, error) {
	ref, id, err := m.refOf(req)
	if err != nil {
		return nil, err
	}
	card, path, err := m.add(ctx, ref, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"model_id": card.ID, "card_file": path, "card": card}, nil
}

// refOf is the Hub reference and id an add asks for: a library name's
// repository and file under the name, or the reference as written.
func (m *Service) refOf(req AddModelRequest) (hub.Ref, string, error) {
	if shortname.IsName(req.Ref) {
		e, ok := m.cfg.Library.Lookup(req.Ref)
		if !ok {
			return hub.Ref{}, "", m.unknown(strings.TrimSpace(req.Ref))
		}
		id := req.ID
		if id == "" {
			id = e.Name
		}
		return e.Ref(), id, nil
	}
	ref, err := hub.ParseRef(req.Ref)
	if err != nil {
		return hub.Ref{}, "", fault.ParamErrorf("ref", "%v; or name a model of the library, e.g. qwen3:8b (skulk list --library)", err)
	}
	return ref, req.ID, nil
}

// add builds the pinned card of ref (under id; "" derives one from the
// file name), stores it and shares it with the cluster. It returns the
// card and its file's path.
func (m *Service) add(ctx context.Context, ref hub.Ref, id string) (catalog.Card, string, error) {
	if m.cfg.Hub.Offline() {
		return catalog.Card{}, "", hubError("add "+ref.String(), &hub.OfflineError{Op: "adding " + ref.String()})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != "" {
		if err := m.refuseExisting(id); err != nil {
			return catalog.Card{}, "", err
		}
	}
	card, err := m.cfg.Hub.CardFor(ctx, ref, id)
	if err != nil {
		return catalog.Card{}, "", hubError("add "+ref.String(), err)
	}
	if err := m.refuseExisting(card.ID); err != nil {
		return catalog.Card{}, "", err
	}
	path, err := m.cfg.Store.AddCustom(card)
	if err != nil {
		return catalog.Card{}, "", err
	}
	m.cfg.Refresh()
	if err := m.share(ctx, card); err != nil {
		// Undone here too, so a retry starts from where this began.
		if _, rerr := m.cfg.Store.RemoveCustom(card.ID); rerr != nil {
			err = errors.Join(err, rerr)
		}
		m.cfg.Refresh()
		return catalog.Card{}, "", err
	}
	return card, path, nil
}

// share commits card to the cluster's catalog, when there is a cluster.
func (m *Service) share(ctx context.Context, card catalog.Card) error {
	if m.cfg.Share == nil {
		return nil
	}
	if err := m.cfg.Share(ctx, card); err != nil {
		return fmt.Errorf("model %s: the cluster's catalog did not take the card: %w", card.ID, err)
	}
	return nil
}

// refuseExisting answers 409 when id is in the catalog.
func (m *Service) refuseExisting(id string) error {
	if _, ok := m.cfg.Catalog().Get(id); ok {
		return modelErrorf(http.StatusConflict, nil, "model %s already exists; remove it first (skulk models rm %s) or choose another id (--id)", id, id)
	}
	return nil
}

// ImportModel installs a GGUF file from the node's file system: the file
// must lie under an import directory (else *ImportPathError, 404), is
// validated as a GGUF model this node can describe, copied (hashed) into
// the store and published with its sidecar.
func (m *Service) ImportModel(ctx context.Context, req ImportModelRequest) (any, error) {
	dirs := m.cfg.ImportDirs
	if req.FromLoopback {
		dirs = append(slices.Clone(dirs), m.cfg.LoopbackImportDirs...)
	}
	src, err := resolveImport(req.Path, dirs)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(src)
	switch {
	case err != nil:
		return nil, fault.ParamErrorf("path", "cannot read %s on the node: %v", fault.Quote(req.Path), err)
	case !fi.Mode().IsRegular():
		return nil, fault.ParamErrorf("path", "%s is not a regular file", fault.Quote(req.Path))
	}
	id := req.ID
	if id == "" {
		id = hub.DefaultID(filepath.Clean(req.Path))
	}
	if err := checkGGUF(id, src, fault.Quote(req.Path)); err != nil {
		return nil, err
	}
	return m.install(ctx, id, src, func(ctx context.Context) (catalog.Card, error) { return m.cfg.Store.Import(ctx, id, src) })
}

// install publishes the GGUF file src, already checked, as model id with
// put, and shares its card: the one way a file enters the catalog, whether
// the node read it from a path or received it by upload.
func (m *Service) install(ctx context.Context, id, src string, put func(context.Context) (catalog.Card, error)) (map[string]any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Only this node's own cards refuse the id here: the same file imported
	// on another node is the cluster's card already, and the master takes
	// it again as done (another card under the id it refuses, 409).
	if own, _ := m.cfg.Store.Catalog(); own != nil {
		if have, ok := own.Get(id); ok {
			if m.sameImport(have, src) {
				// Imported here already (before models were cluster
				// state, or the cluster forgot it): the bytes are in place,
				// so the card is only shared again.
				if err := m.share(ctx, have); err != nil {
					return nil, err
				}
				if m.cfg.Imported != nil {
					m.cfg.Imported(have)
				}
				return map[string]any{"model_id": have.ID, "card": have, "already_installed": true}, nil
			}
			return nil, modelErrorf(http.StatusConflict, nil, "model %s already exists; remove it first (skulk models rm %s) or choose another id (--id)", id, id)
		}
	}
	card, err := put(ctx)
	if err != nil {
		return nil, err
	}
	m.cfg.Refresh()
	if err := m.share(ctx, card); err != nil {
		// The copy goes too, so a retry imports afresh rather than
		// meeting a model that exists here only.
		if _, rerr := m.cfg.Store.RemoveArtifacts(card.ID); rerr != nil {
			err = errors.Join(err, rerr)
		}
		m.cfg.Refresh()
		return nil, err
	}
	if m.cfg.Imported != nil {
		m.cfg.Imported(card)
	}
	return map[string]any{"model_id": card.ID, "card": card}, nil
}

// sameImport reports whether have is the installed card an import of src
// under its id publishes.
func (m *Service) sameImport(have catalog.Card, src string) bool {
	if have.Builtin || have.Repo != "" {
		return false
	}
	want, err := catalog.ImportCard(have.ID, src)
	if err != nil || want.Digest() != have.Digest() {
		return false
	}
	_, err = m.cfg.Store.Locate(have)
	return err == nil
}

// checkGGUF refuses a file that is not a GGUF model a card can describe;
// shown is how the answer names it.
func checkGGUF(id, path, shown string) error {
	f, err := gguf.Open(path)
	if err != nil {
		if fe, ok := errors.AsType[*gguf.FormatError](err); ok {
			err = fe // without the resolved path: the answer names the file once, as sent
		}
		return &fileError{api: fault.ParamErrorf("path", "%s is not a usable GGUF file: %v", shown, err), cause: err}
	}
	defer f.Close()
	if _, err := catalog.CardFromGGUF(id, f); err != nil {
		return fault.ParamErrorf("path", "%s cannot be served as model %s: %v", shown, id, err)
	}
	return nil
}

// fileError is the invalid-request answer about a model file that also
// keeps the reader's typed error (gguf.ErrLimit, gguf.ErrTruncated, ...) in
// its chain, so a caller can tell why without parsing the message.
type fileError struct {
	api   *fault.Error
	cause error
}

func (e *fileError) Error() string   { return e.api.Error() }
func (e *fileError) Unwrap() []error { return []error{e.api, e.cause} }

// PullModel starts the download of a model's weights on this node. A
// name of the library that the catalog does not hold yet is added first
// (pinned as AddModel pins it), so one pull takes qwen3:8b from nothing
// to downloading.
func (m *Service) PullModel(ctx context.Context, id ids.ModelID) (any, error) {
	card, added, err := m.pullCard(ctx, id)
	if err != nil {
		return nil, err
	}
	id = ids.ModelID(card.ID)
	done := map[string]any{"model_id": id, "added": added, "download": DownloadStatus{State: DownloadDone, DoneBytes: card.StorageBytes, TotalBytes: card.StorageBytes}}
	if card.Builtin {
		return done, nil
	}
	if _, err := m.cfg.Store.Locate(card); err == nil {
		return done, nil
	} else if card.Repo == "" {
		return nil, modelErrorf(http.StatusConflict, err, "model %s was imported from a local file and has no source to download from: %v", id, err)
	}
	if m.cfg.Hub.Offline() {
		return nil, hubError("pull "+string(id), &hub.OfflineError{Op: "downloading " + string(id)})
	}
	m.cfg.Downloads.Start(card)
	st, _ := m.cfg.Downloads.Status(string(id))
	return map[string]any{"model_id": id, "added": added, "download": st}, nil
}

// pullCard is the card a pull downloads: the catalog's, under the id or
// its library name, or a library model's, added now (added true).
func (m *Service) pullCard(ctx context.Context, id ids.ModelID) (catalog.Card, bool, error) {
	if card, ok := m.cfg.Catalog().Get(string(m.resolveHeld(id))); ok {
		return card, false, nil
	}
	e, ok := m.cfg.Library.Lookup(string(id))
	if !ok {
		return catalog.Card{}, false, m.unknown(string(id))
	}
	card, _, err := m.add(ctx, e.Ref(), e.Name)
	if err != nil {
		// A pull beside this one may have added it first.
		if have, ok := m.cfg.Catalog().Get(e.Name); ok {
			return have, false, nil
		}
		return catalog.Card{}, false, err
	}
	return card, true, nil
}

func unknownModel(id ids.ModelID) error {
	return fault.Errorf(fault.ClassNotFound, "unknown model %s (GET /models lists the catalog; skulk models add hf:OWNER/REPO adds one)", fault.Quote(id))
}

// RemoveModel takes a model out of the cluster's catalog (committed first,
// so every node stops knowing it), then deletes its custom card here and,
// with files, every downloaded copy of its weights on this node. It
// refuses while an instance uses the model, and for the built-in model.
func (m *Service) RemoveModel(ctx context.Context, id ids.ModelID, files bool) (any, error) {
	id = m.resolveHeld(id)
	if string(id) == catalog.BuiltinID {
		return nil, modelErrorf(http.StatusConflict, nil, "model %s is built into the binary and cannot be removed", id)
	}
	st, err := m.cfg.Cluster.State(ctx)
	if err != nil {
		return nil, err
	}
	if used := instancesOf(st, id); len(used) > 0 {
		return nil, modelErrorf(http.StatusConflict, nil, "model %s is used by instance %s; stop it first (skulk stop %s)", id, strings.Join(used, ", "), used[0])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !files && m.installedOnly(id) {
		return nil, modelErrorf(http.StatusConflict, nil, "model %s has no custom card, only installed files; remove them with files=true (skulk models rm %s --files)", id, id)
	}
	unshared := false
	if m.cfg.Unshare != nil {
		if unshared, err = m.cfg.Unshare(ctx, id); err != nil {
			return nil, fmt.Errorf("model %s: the cluster's catalog did not let it go: %w", id, err)
		}
	}
	card, err := m.cfg.Store.RemoveCustom(string(id))
	if err != nil {
		return nil, err
	}
	removed := 0
	if files {
		if removed, err = m.cfg.Store.RemoveArtifacts(string(id)); err != nil {
			return nil, err
		}
	}
	m.cfg.Refresh()
	if removed > 0 && m.cfg.FilesRemoved != nil {
		m.cfg.FilesRemoved(id)
	}
	_, still := m.cfg.Catalog().Get(string(id))
	if !card && removed == 0 && !unshared {
		return nil, unknownModel(id)
	}
	return map[string]any{"model_id": id, "removed_card": card, "removed_artifacts": removed,
		"removed_from_cluster": unshared, "still_in_catalog": still}, nil
}

// installedOnly reports whether this node has verified weights of id and
// no custom card for it: removing the card alone would change nothing.
func (m *Service) installedOnly(id ids.ModelID) bool {
	custom, _ := catalog.Build(catalog.Custom{Dir: m.cfg.Store.Config().CustomDir})
	if _, ok := custom.Get(string(id)); ok {
		return false
	}
	insts, err := m.cfg.Store.Inventory()
	if err != nil {
		return false
	}
	for _, in := range insts {
		if in.Installed && in.Card.ID == string(id) {
			return true
		}
	}
	return false
}

// instancesOf lists the instances of a model, sorted.
func instancesOf(st state.State, id ids.ModelID) []string {
	var out []string
	for iid, inst := range st.Instances {
		if inst.Model == id {
			out = append(out, string(iid))
		}
	}
	sort.Strings(out)
	return out
}

// ModelRequirements sizes a model at a context window.
func (m *Service) ModelRequirements(ctx context.Context, id ids.ModelID, contextTokens int) (any, error) {
	card, ok := m.cfg.Catalog().Get(string(m.resolveHeld(id)))
	if !ok {
		return nil, m.notHeld(id)
	}
	r, err := card.Requirements(contextTokens)
	if err != nil {
		return nil, fault.ParamErrorf("context", "%v", err)
	}
	return r, nil
}

// SearchModels lists GGUF repositories on the Hub.
func (m *Service) SearchModels(ctx context.Context, query string, limit int) (any, error) {
	res, err := m.cfg.Hub.Search(ctx, query, limit)
	if err != nil {
		return nil, hubError("search "+query, err)
	}
	if res == nil {
		res = []hub.SearchResult{}
	}
	return map[string]any{"object": "list", "data": res}, nil
}
