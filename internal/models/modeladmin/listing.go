package modeladmin

import (
	"context"
	"errors"
	"sort"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// CatalogEntry is a catalog model and its placement state in the cluster.
type CatalogEntry struct {
	catalog.Card
	Placement string           `json:"placement"` // none, pending, ready or failed; unknown while the cluster has no master
	Instances []ids.InstanceID `json:"instances"`
}

// Entry is one model of GET /models and GET /models/{id}: the catalog
// entry and this node's copy of its weights.
type Entry struct {
	CatalogEntry
	Installed bool            `json:"installed"`          // this node has verified weights
	Reason    string          `json:"reason,omitempty"`   // why not, when not
	Download  *DownloadStatus `json:"download,omitempty"` // this node's
	// NodeDownloads is every node's latest download of the model, as
	// gossiped telemetry (throttled, so it lags this node's Download).
	NodeDownloads map[ids.NodeID]DownloadStatus `json:"node_downloads,omitempty"`
	// HeldBy names the nodes the State says hold the model's weights (a
	// completed download or an import): where a stage fetches its tensors.
	HeldBy []ids.NodeID `json:"held_by,omitempty"`
}

// Catalog lists every model with its placement and this node's
// installation, then the artifacts on disk that failed verification and
// are in the catalog under no card (with the reason).
func (m *Service) Catalog(ctx context.Context) (any, error) {
	entries, err := m.entries(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"object": "list", "data": entries}, nil
}

// ShowModel returns one model's entry.
func (m *Service) ShowModel(ctx context.Context, id ids.ModelID) (any, error) {
	entries, err := m.entries(ctx)
	if err != nil {
		return nil, err
	}
	held := m.resolveHeld(id)
	for _, e := range entries {
		if e.ID == string(held) {
			return e, nil
		}
	}
	return nil, m.notHeld(id)
}

func (m *Service) entries(ctx context.Context) ([]Entry, error) {
	// The catalog is this node's; only the placements come from the
	// cluster. Before the first election (or during one) the listing still
	// answers, with the placements unknown.
	st, err := m.cfg.Cluster.State(ctx)
	known := err == nil
	if err != nil && fault.ClassOf(err) != fault.ClassUnavailable {
		return nil, err
	}
	cards := m.cfg.Catalog().List()
	out := make([]Entry, 0, len(cards))
	seen := map[string]bool{}
	var cluster map[string]map[ids.NodeID]DownloadStatus
	if m.cfg.ClusterDownloads != nil {
		cluster = m.cfg.ClusterDownloads()
	}
	for _, c := range cards {
		seen[c.ID] = true
		e := m.entry(placed(st, c))
		if !known {
			e.Placement = "unknown"
		}
		e.NodeDownloads = cluster[c.ID]
		e.HeldBy = heldBy(st, ids.ModelID(c.ID))
		out = append(out, e)
	}
	insts, err := m.cfg.Store.Inventory()
	if err != nil {
		return nil, err
	}
	for _, in := range insts {
		if in.Installed || in.Card.ID == "" || seen[in.Card.ID] {
			continue
		}
		seen[in.Card.ID] = true
		out = append(out, Entry{CatalogEntry: CatalogEntry{Card: in.Card, Placement: "none", Instances: []ids.InstanceID{}},
			Reason: in.Reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// placed is card with its instances in st and the most advanced of their
// states.
func placed(st state.State, c catalog.Card) CatalogEntry {
	e := CatalogEntry{Card: c, Placement: "none", Instances: []ids.InstanceID{}}
	rank := map[string]int{"none": 0, "failed": 1, "pending": 2, "ready": 3}
	for id, inst := range st.Instances {
		if string(inst.Model) != c.ID {
			continue
		}
		e.Instances = append(e.Instances, id)
		if s := string(inst.Status); rank[s] > rank[e.Placement] {
			e.Placement = s
		}
	}
	sort.Slice(e.Instances, func(i, j int) bool { return e.Instances[i] < e.Instances[j] })
	return e
}

// heldBy lists, sorted, the nodes whose download of model completed.
func heldBy(st state.State, model ids.ModelID) []ids.NodeID {
	var out []ids.NodeID
	for id, n := range st.Nodes {
		if n.Downloads[model].Status == state.DownloadCompleted {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *Service) entry(e CatalogEntry) Entry {
	me := Entry{CatalogEntry: e}
	if e.Builtin {
		me.Installed = true
	} else if _, err := m.cfg.Store.Locate(e.Card); err == nil {
		me.Installed = true
	} else if nie := (*catalog.NotInstalledError)(nil); errors.As(err, &nie) {
		me.Reason = nie.Reason
	} else {
		me.Reason = err.Error()
	}
	if st, ok := m.cfg.Downloads.Status(e.ID); ok {
		me.Download = &st
	}
	return me
}
