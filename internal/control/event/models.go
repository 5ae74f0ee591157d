package event

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Model kinds: a card added to or removed from the cluster's catalog.
const (
	KindAddModel     Kind = "AddModel"
	KindRemoveModel  Kind = "RemoveModel"
	KindModelAdded   Kind = "ModelAdded"
	KindModelRemoved Kind = "ModelRemoved"
)

// Bounds on a replicated model card. MaxCardLayers matches the decoder's
// array limit (4*MaxRanks), so every card that validates also decodes; the
// template's bound keeps a full batch of cards (64) well inside one log
// record (eventlog.MaxPayload, 16 MiB).
const (
	MaxCardLayers        = 4 * MaxRanks
	MaxCardStringBytes   = 256       // names, architecture, repository, revision, one file or tag
	MaxCardListEntries   = 64        // files, tasks, capabilities, backends
	MaxChatTemplateBytes = 128 << 10 // a chat template override
)

// ModelCard is a model's card as the cluster replicates it: everything
// placement, the runners and the catalog listings need to know about a
// model, without its bytes. It mirrors catalog.Card field for field (the
// catalog converts), so a card travels without loss; its numbers are
// int64 so a card's sizes never wrap.
type ModelCard struct {
	ID       ids.ModelID `json:"id"`
	Name     string      `json:"name,omitempty"`
	Repo     string      `json:"repo,omitempty"`
	Files    []string    `json:"files,omitempty"`
	Revision string      `json:"revision,omitempty"`

	Arch           string  `json:"arch"`
	Layers         int64   `json:"layers"`
	HiddenSize     int64   `json:"hidden_size"`
	Heads          int64   `json:"heads,omitempty"`
	KVHeads        int64   `json:"kv_heads"`
	HeadDim        int64   `json:"head_dim"`
	ValueDim       int64   `json:"value_dim,omitempty"`
	VocabSize      int64   `json:"vocab_size,omitempty"`
	ContextLength  int64   `json:"context_length"`
	StorageBytes   int64   `json:"storage_bytes"`
	LayerBytes     []int64 `json:"layer_bytes"`
	EmbeddingBytes int64   `json:"embedding_bytes,omitempty"`
	HeadBytes      int64   `json:"head_bytes,omitempty"`
	TiedEmbeddings bool    `json:"tied_embeddings,omitempty"`

	Tasks              []string     `json:"tasks"`
	Capabilities       []string     `json:"capabilities,omitempty"`
	CompatibleBackends []string     `json:"compatible_backends,omitempty"`
	BackendPreference  []string     `json:"backend_preference,omitempty"`
	Runtime            ModelRuntime `json:"runtime,omitzero"`
	ChatTemplate       string       `json:"chat_template,omitempty"`
}

// ModelRuntime is a card's engine settings (catalog.Runtime).
type ModelRuntime struct {
	MaxPipelineSplitLayer int64  `json:"max_pipeline_split_layer,omitempty"`
	ServedContext         int64  `json:"served_context,omitempty"`
	KVCacheType           string `json:"kv_cache_type,omitempty"`
	Speculative           string `json:"speculative,omitempty"`
	DraftModel            string `json:"draft_model,omitempty"`
	DraftMax              int64  `json:"draft_max,omitempty"`
}

// Validate checks the card's shape and bounds. What a card means (its
// shape adds up, its repository and revision are well formed) is the
// catalog's to check; the master does before it decides.
func (c ModelCard) Validate() error {
	if err := c.ID.Validate(); err != nil {
		return fmt.Errorf("id: %w", err)
	}
	if c.Layers <= 0 || c.Layers > MaxCardLayers {
		return fmt.Errorf("layers: %d outside 1..%d", c.Layers, MaxCardLayers)
	}
	if int64(len(c.LayerBytes)) != c.Layers {
		return fmt.Errorf("layer_bytes: %d sizes for %d layers", len(c.LayerBytes), c.Layers)
	}
	for i, b := range c.LayerBytes {
		if b < 0 {
			return fmt.Errorf("layer_bytes[%d]: negative", i)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"hidden_size", c.HiddenSize}, {"heads", c.Heads}, {"kv_heads", c.KVHeads}, {"head_dim", c.HeadDim},
		{"value_dim", c.ValueDim}, {"vocab_size", c.VocabSize}, {"context_length", c.ContextLength},
		{"storage_bytes", c.StorageBytes}, {"embedding_bytes", c.EmbeddingBytes}, {"head_bytes", c.HeadBytes},
		{"runtime.max_pipeline_split_layer", c.Runtime.MaxPipelineSplitLayer},
		{"runtime.served_context", c.Runtime.ServedContext}, {"runtime.draft_max", c.Runtime.DraftMax},
	} {
		if n.v < 0 {
			return fmt.Errorf("%s: negative", n.name)
		}
	}
	for _, s := range []struct{ name, v string }{
		{"name", c.Name}, {"repo", c.Repo}, {"revision", c.Revision}, {"arch", c.Arch},
		{"runtime.kv_cache_type", c.Runtime.KVCacheType}, {"runtime.speculative", c.Runtime.Speculative},
		{"runtime.draft_model", c.Runtime.DraftModel},
	} {
		if err := cardString(s.v); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	for _, l := range []struct {
		name string
		v    []string
	}{
		{"files", c.Files}, {"tasks", c.Tasks}, {"capabilities", c.Capabilities},
		{"compatible_backends", c.CompatibleBackends}, {"backend_preference", c.BackendPreference},
	} {
		if len(l.v) > MaxCardListEntries {
			return fmt.Errorf("%s: %d entries, limit %d", l.name, len(l.v), MaxCardListEntries)
		}
		for i, s := range l.v {
			if err := cardString(s); err != nil {
				return fmt.Errorf("%s[%d]: %w", l.name, i, err)
			}
		}
	}
	if len(c.ChatTemplate) > MaxChatTemplateBytes {
		return fmt.Errorf("chat_template: %d bytes, limit %d", len(c.ChatTemplate), MaxChatTemplateBytes)
	}
	if !utf8.ValidString(c.ChatTemplate) {
		return errors.New("chat_template: not valid UTF-8")
	}
	return nil
}

func cardString(s string) error {
	if len(s) > MaxCardStringBytes {
		return fmt.Errorf("%d bytes, limit %d", len(s), MaxCardStringBytes)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	return nil
}

// SameCard reports whether a and b encode alike: the same card, whether a
// list was nil or empty.
func SameCard(a, b ModelCard) bool {
	x, errA := encMode.Marshal(a)
	y, errB := encMode.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// AddModel asks the master to make Card part of the cluster's catalog, so
// every node can place, list and serve it. The bytes stay where they are:
// the nodes that hold them say so with DownloadCompleted, as workers, each
// only about itself. A card already in the catalog is refused unless it is
// the same card.
type AddModel struct {
	ID   ids.CommandID `json:"id"`
	Card ModelCard     `json:"card"`
}

// RemoveModel asks the master to take a model's card out of the cluster's
// catalog; refused while an instance of it exists.
type RemoveModel struct {
	ID    ids.CommandID `json:"id"`
	Model ids.ModelID   `json:"model"`
}

// ModelAdded puts a card into the State's catalog.
type ModelAdded struct {
	Card ModelCard `json:"card"`
}

// ModelRemoved takes a card out of the State's catalog. Which nodes hold
// the model's bytes (their downloads) is theirs and stays.
type ModelRemoved struct {
	Model ids.ModelID `json:"model"`
}

func (AddModel) Kind() Kind     { return KindAddModel }
func (RemoveModel) Kind() Kind  { return KindRemoveModel }
func (ModelAdded) Kind() Kind   { return KindModelAdded }
func (ModelRemoved) Kind() Kind { return KindModelRemoved }

func (c AddModel) CommandID() ids.CommandID    { return c.ID }
func (c RemoveModel) CommandID() ids.CommandID { return c.ID }

func (AddModel) isCommand()    {}
func (RemoveModel) isCommand() {}
func (ModelAdded) isEvent()    {}
func (ModelRemoved) isEvent()  {}

func (c AddModel) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"card", c.Card.Validate()},
	)
}

func (c RemoveModel) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"model", c.Model.Validate()},
	)
}

func (e ModelAdded) Validate() error {
	return firstInvalid(e.Kind(), check{"card", e.Card.Validate()})
}

func (e ModelRemoved) Validate() error {
	return firstInvalid(e.Kind(), check{"model", e.Model.Validate()})
}
