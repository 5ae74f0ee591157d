package modeladmin

import (
	"context"
	"fmt"
	"github.com/skulk/skulk/internal/platform/config"
	"strings"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// maxSuggestions bounds the names an unknown model's answer offers.
const maxSuggestions = 3

// Resolve maps the model a request names to its catalog id: the id itself
// when the catalog has it, else the library's name for it (qwen3 and
// qwen3:latest are qwen3:8b) when the catalog has that. A library model
// that is not in the catalog is a 404 that says to pull it; any other name
// a 404 with the library names nearest to it (*shortname.UnknownError in
// its chain).
func (m *Service) Resolve(name string) (string, error) {
	return Resolver(m.cfg.Catalog, m.cfg.Library)(name)
}

// Resolver is Service.Resolve over a catalog and a library, for the
// request path (the gateway), which has no Service.
func Resolver(cat func() *catalog.Catalog, lib shortname.Library) func(name string) (string, error) {
	return func(name string) (string, error) {
		c := cat()
		if _, ok := c.Get(name); ok {
			return name, nil
		}
		e, ok := lib.Lookup(name)
		if !ok {
			return "", unknownName(lib, name)
		}
		if _, ok := c.Get(e.Name); ok {
			return e.Name, nil
		}
		return "", fault.Errorf(fault.ClassNotFound, "model %s is in the library but not pulled yet: skulk pull %s adds and downloads it (%s, %s)",
			e.Name, e.Name, e.Description, config.FormatBytes(e.Size))
	}
}

func (m *Service) unknown(name string) error { return unknownName(m.cfg.Library, name) }

// unknownName is the 404 of a name neither the catalog nor the library
// knows.
func unknownName(lib shortname.Library, name string) error {
	u := &shortname.UnknownError{Name: name, Suggestions: lib.Suggest(name, maxSuggestions)}
	msg := u.Error()
	if len(u.Suggestions) > 0 {
		msg += fmt.Sprintf(" (skulk pull %s downloads it; GET /models lists the catalog and GET /models/library the names skulk pull takes)", u.Suggestions[0])
	} else {
		msg += " (GET /models lists the catalog and GET /models/library the names skulk pull takes; skulk models add hf:OWNER/REPO adds any GGUF repository)"
	}
	return &nameError{api: &fault.Error{Class: fault.ClassNotFound, Param: "model", Message: msg}, cause: u}
}

// nameError is the not-found answer about a model name that also keeps
// the *shortname.UnknownError (with its suggestions) in its chain.
type nameError struct {
	api   *fault.Error
	cause *shortname.UnknownError
}

func (e *nameError) Error() string   { return e.api.Error() }
func (e *nameError) Unwrap() []error { return []error{e.api, e.cause} }

// resolveHeld is Resolve for the routes about one model of the catalog
// (show, remove, requirements): the id when the catalog has it, else the
// library name's id when the catalog has that, else id unchanged (the
// route answers its own not-found).
func (m *Service) resolveHeld(id ids.ModelID) ids.ModelID {
	if _, ok := m.cfg.Catalog().Get(string(id)); ok {
		return id
	}
	if e, ok := m.cfg.Library.Lookup(string(id)); ok {
		if _, ok := m.cfg.Catalog().Get(e.Name); ok {
			return ids.ModelID(e.Name)
		}
	}
	return id
}

// notHeld is the 404 of a route about one model that the catalog does not
// hold: a library name says to pull it, anything else is unknown.
func (m *Service) notHeld(id ids.ModelID) error {
	if _, err := m.Resolve(string(id)); err != nil {
		return err
	}
	return unknownModel(id)
}

// LibraryEntry is one name of GET /models/library: the library's entry
// and whether this node's catalog holds it, under which id, and whether
// this node has its weights.
type LibraryEntry struct {
	shortname.Entry
	Family    string `json:"family"`
	Tag       string `json:"tag"`
	Quant     string `json:"quantization"`
	InCatalog bool   `json:"in_catalog"`
	ModelID   string `json:"model_id,omitempty"` // the catalog's id for it, when held
	Installed bool   `json:"installed"`
}

// Library lists the names skulk pull takes (GET /models/library). A
// catalog card counts as the entry when it has the entry's name as its id,
// or was added from the same repository and file under another id.
func (m *Service) Library(ctx context.Context) (any, error) {
	cards := m.cfg.Catalog().List()
	out := make([]LibraryEntry, 0, len(m.cfg.Library.Entries()))
	for _, e := range m.cfg.Library.Entries() {
		le := LibraryEntry{Entry: e, Family: e.Family(), Tag: e.Tag(), Quant: e.Quant()}
		if card, ok := heldAs(cards, e); ok {
			le.InCatalog, le.ModelID = true, card.ID
			_, err := m.cfg.Store.Locate(card)
			le.Installed = err == nil
		}
		out = append(out, le)
	}
	return map[string]any{"object": "list", "data": out}, nil
}

// heldAs finds the card of a library entry: by its name, else by its
// repository and file.
func heldAs(cards []catalog.Card, e shortname.Entry) (catalog.Card, bool) {
	for _, c := range cards {
		if c.ID == e.Name {
			return c, true
		}
	}
	for _, c := range cards {
		if strings.EqualFold(c.Repo, e.Repo) && len(c.Files) > 0 && c.Files[0] == e.File {
			return c, true
		}
	}
	return catalog.Card{}, false
}
