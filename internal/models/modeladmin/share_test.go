package modeladmin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

func statusOf(err error) int {
	if err == nil {
		return 200
	}
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		return se.HTTPStatus()
	}
	return fault.ClassOf(err).HTTPStatus()
}

// TestShareAndUnshare runs import and remove over a real store with the
// cluster's catalog refusing or taking the decision: an import is answered
// 2xx only once the cluster took the card, and undone here when it did
// not; the same file imported again shares the installed card again; a
// removal reaches the cluster only when nothing here refuses it,
// and touches nothing here when the cluster refuses.
func TestShareAndUnshare(t *testing.T) {
	root := t.TempDir()
	importDir := filepath.Join(root, "import")
	if err := os.MkdirAll(importDir, 0o700); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(importDir, "stories.gguf")
	if err := os.WriteFile(src, good, 0o600); err != nil {
		t.Fatal(err)
	}
	// The same model under another file name is another card.
	other := filepath.Join(importDir, "renamed.gguf")
	if err := os.WriteFile(other, good, 0o600); err != nil {
		t.Fatal(err)
	}
	store := catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "cards")})
	var st state.State
	var shareErr, unshareErr error
	var shared []catalog.Card
	var unshared, filesRemoved []ids.ModelID
	m := New(Config{Store: store, ImportDirs: []string{importDir}, Cluster: clusterFunc(func() state.State { return st }), Catalog: func() *catalog.Catalog { c, _ := store.Catalog(); return c }, Refresh: func() {},
		Share: func(_ context.Context, c catalog.Card) error {
			if shareErr != nil {
				return shareErr
			}
			shared = append(shared, c)
			return nil
		},
		FilesRemoved: func(id ids.ModelID) { filesRemoved = append(filesRemoved, id) },
		Unshare: func(_ context.Context, id ids.ModelID) (bool, error) {
			if unshareErr != nil {
				return false, unshareErr
			}
			unshared = append(unshared, id)
			return true, nil
		},
	})
	inCatalog := func() bool { c, _ := store.Catalog(); _, ok := c.Get("stories"); return ok }
	noQuorum := fault.Errorf(fault.ClassUnavailable, "no quorum")
	inUse := state.State{Instances: map[ids.InstanceID]state.Instance{"i1": {Model: "stories"}}}

	steps := []struct {
		name       string
		do         func() error
		state      state.State
		shareErr   error
		unshareErr error
		status     int
		inCatalog  bool
		shares     int // Share calls that took a card, so far
		unshares   int
	}{
		{name: "import_refused_by_the_cluster", shareErr: noQuorum, status: 503, inCatalog: false,
			do: func() error { _, err := m.ImportModel(t.Context(), ImportModelRequest{Path: src}); return err }},
		{name: "import_retried", status: 200, inCatalog: true, shares: 1,
			do: func() error { _, err := m.ImportModel(t.Context(), ImportModelRequest{Path: src}); return err }},
		{name: "import_again_shares_again", status: 200, inCatalog: true, shares: 2,
			do: func() error { _, err := m.ImportModel(t.Context(), ImportModelRequest{Path: src}); return err }},
		{name: "import_another_file_under_the_id", status: 409, inCatalog: true, shares: 2,
			do: func() error {
				_, err := m.ImportModel(t.Context(), ImportModelRequest{Path: other, ID: "stories"})
				return err
			}},
		{name: "remove_while_placed", state: inUse, status: 409, inCatalog: true, shares: 2,
			do: func() error { _, err := m.RemoveModel(t.Context(), "stories", true); return err }},
		{name: "remove_the_card_only_of_an_installed_model", status: 409, inCatalog: true, shares: 2,
			do: func() error { _, err := m.RemoveModel(t.Context(), "stories", false); return err }},
		{name: "remove_refused_by_the_cluster", unshareErr: noQuorum, status: 503, inCatalog: true, shares: 2,
			do: func() error { _, err := m.RemoveModel(t.Context(), "stories", true); return err }},
		{name: "remove", status: 200, inCatalog: false, shares: 2, unshares: 1,
			do: func() error { _, err := m.RemoveModel(t.Context(), "stories", true); return err }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			st, shareErr, unshareErr = s.state, s.shareErr, s.unshareErr
			err := s.do()
			if got := statusOf(err); got != s.status {
				t.Fatalf("status %d (%v), want %d", got, err, s.status)
			}
			if got := inCatalog(); got != s.inCatalog {
				t.Fatalf("in this node's catalog: %v, want %v", got, s.inCatalog)
			}
			if len(shared) != s.shares || len(unshared) != s.unshares {
				t.Fatalf("%d cards shared and %d unshared, want %d and %d", len(shared), len(unshared), s.shares, s.unshares)
			}
		})
	}
	if len(filesRemoved) != 1 || filesRemoved[0] != "stories" {
		t.Fatalf("files removed reported for %v, want once for stories", filesRemoved)
	}
	for _, c := range shared {
		if c.ID != "stories" || c.Digest() != shared[0].Digest() || c.Layers == 0 {
			t.Fatalf("shared %+v, want the imported card each time", shared)
		}
	}
}

type clusterFunc func() state.State

func (f clusterFunc) State(context.Context) (state.State, error) { return f(), nil }
