package library

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/models/hub"
	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/models/tensorfetch"
	"github.com/skulk/skulk/internal/platform/ids"
)

// peerFetch is how the node takes a stage's tensors from other members:
// the fetcher and the members to ask, those the State says have the model
// first.
type peerFetch struct {
	fetcher *tensorfetch.Fetcher
	sources func(ctx context.Context, model ids.ModelID) []ids.NodeID
}

// AttachPeers lets ResolveStage fetch tensors from members (once the QUIC
// endpoint and the membership exist).
func (m *Library) AttachPeers(dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error), sources func(ctx context.Context, model ids.ModelID) []ids.NodeID) {
	f := &tensorfetch.Fetcher{Dir: filepath.Join(m.store.Config().ModelsDir, ".skulk", "peer"), Dial: dial, Logger: m.log}
	m.peer.Store(&peerFetch{fetcher: f, sources: sources})
}

// ResolveStage is the worker's Resolve: the model's verified local weights
// when installed here; else the shard's own tensors fetched from a member
// that has the model; else the model downloaded from the Hub.
func (m *Library) ResolveStage(ctx context.Context, model ids.ModelID, sh event.Shard, downloading func()) (Weights, error) {
	card, known := m.Card(model)
	if known && !card.Builtin {
		if _, err := m.store.Locate(card); err != nil {
			wm, ferr := m.fetchStage(ctx, model, &card, sh, downloading)
			switch {
			case ferr == nil:
				return wm, nil
			case errors.As(ferr, new(*tensorfetch.VerifyError)) || ctx.Err() != nil:
				return Weights{}, ferr
			}
			if nse := (*tensorfetch.NoSourceError)(nil); !errors.As(ferr, &nse) || len(nse.Reasons) > 0 {
				m.log.Info("no member supplied the stage's tensors; trying the Hub", "model", model, "reason", ferr)
			}
		}
	}
	if !known {
		wm, err := m.fetchStage(ctx, model, nil, sh, downloading)
		if errors.As(err, new(*tensorfetch.VerifyError)) || ctx.Err() != nil {
			return Weights{}, err
		}
		if err != nil {
			return Weights{}, fmt.Errorf("model %s is not in this node's catalog and no member supplied its tensors (%w); add it on any node: skulk models add", model, err)
		}
		return wm, nil
	}
	return m.resolve(ctx, model, downloading)
}

// fetchStage fetches the header and the tensors of shard sh from a member
// into a partial copy, with progress as a download of the model. want,
// when known, is this node's card: a member's copy must be that artifact.
func (m *Library) fetchStage(ctx context.Context, model ids.ModelID, want *catalog.Card, sh event.Shard, downloading func()) (Weights, error) {
	pf := m.peer.Load()
	if pf == nil {
		return Weights{}, &tensorfetch.NoSourceError{Model: string(model)}
	}
	srcs := pf.sources(ctx, model)
	r := tensorfetch.Range{Start: int(sh.LayerStart), End: int(sh.LayerEnd), First: sh.HoldsEmbedding, Last: sh.HoldsHead}
	id := string(model)
	started := false
	start := func(total int64) {
		if started {
			return
		}
		started = true
		if downloading != nil {
			downloading()
		}
		m.mu.Lock()
		m.active[id]++
		if m.active[id] == 1 {
			m.downloads[id] = &modeladmin.DownloadStatus{State: modeladmin.DownloadRunning, TotalBytes: total}
		}
		m.mu.Unlock()
	}
	res, err := pf.fetcher.Fetch(ctx, id, srcs, r, want, func(done, total int64) {
		start(total)
		m.progress(id, hub.Progress{File: "tensors from a peer", Done: done, Total: total})
	})
	if started {
		m.mu.Lock()
		m.active[id]--
		if m.active[id] == 0 {
			delete(m.active, id)
			delete(m.onDisk, id)
		}
		d := m.downloads[id]
		if err == nil {
			d.State, d.Error = modeladmin.DownloadDone, ""
		} else {
			d.State, d.Error = modeladmin.DownloadFailed, err.Error()
		}
		final := *d
		m.mu.Unlock()
		m.publishDownload(id, final)
	}
	if err != nil {
		return Weights{}, err
	}
	if res.Fetched > 0 {
		m.log.Info("fetched a stage's tensors from a member", "model", model, "from", res.Source, "bytes", res.Fetched,
			"reused_bytes", res.Reused, "layers", fmt.Sprintf("[%d, %d)", sh.LayerStart, sh.LayerEnd))
	}
	tmpl := res.Card.ChatTemplate
	if want != nil {
		tmpl = want.ChatTemplate
	}
	return Weights{Path: res.Path, ChatTemplate: tmpl}, nil
}

// Imported reports an import as a completed download of the model on this
// node, in the background: the State then names this node to members that
// need the model's tensors.
func (m *Library) Imported(card catalog.Card) {
	m.wg.Go(func() {
		m.reportEvent(event.DownloadCompleted{Node: m.node, Model: ids.ModelID(card.ID), Bytes: uint64(max(card.StorageBytes, 0))})
	})
}

// FilesRemoved reports, in the background, that this node no longer holds
// a model's weights (skulk models rm --files): a worker can say so only as
// a terminal download outcome, and the State then no longer names this
// node to members that need the model's tensors.
func (m *Library) FilesRemoved(id ids.ModelID) {
	m.wg.Go(func() {
		m.reportEvent(event.DownloadFailed{Node: m.node, Model: id, Reason: "the weights were removed from this node (skulk models rm --files)"})
	})
}

// Served is this node's verified copy of a model for a member's fetch
// (tensorfetch.Serve's lookup).
func (m *Library) Served(ctx context.Context, model string) (tensorfetch.Served, error) {
	card, ok := m.Card(ids.ModelID(model))
	if !ok || card.Builtin || len(card.Files) == 0 {
		return tensorfetch.Served{}, fmt.Errorf("model %q is not installed on this node: %w", model, tensorfetch.ErrNotInstalled)
	}
	in, e, err := m.store.TensorSums(ctx, card)
	if err != nil {
		return tensorfetch.Served{}, err
	}
	return tensorfetch.Served{Card: in.Card, Path: in.Paths[0], Size: e.Size, SHA256: e.SHA256, Sums: e.Tensors}, nil
}

// TensorSources lists the members to ask for a model's tensors: those the
// State says completed its download first, then every other live member
// (whose copy the State may not name).
func TensorSources(self ids.NodeID, st func(context.Context) (state.State, error), members func() []ids.NodeID) func(ctx context.Context, model ids.ModelID) []ids.NodeID {
	return func(ctx context.Context, model ids.ModelID) []ids.NodeID {
		live := members()
		var first, rest []ids.NodeID
		s, err := st(ctx)
		for _, n := range live {
			if n == self {
				continue
			}
			if err == nil && s.Nodes[n].Downloads[model].Status == state.DownloadCompleted {
				first = append(first, n)
			} else {
				rest = append(rest, n)
			}
		}
		return append(first, rest...)
	}
}
