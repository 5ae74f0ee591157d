// Package catalog knows which models a node can serve: their cards (what a
// model is and what placing it needs) and where their weights are. Today it
// has one built-in card whose weights ship inside the binary; cards from
// files and the Hugging Face Hub plug in as further Sources.
package catalog

import (
	"fmt"
	"regexp"
)

// Capability names what a model can do beyond plain text generation.
type Capability string

// Capabilities.
const (
	CapTools      Capability = "tools"
	CapReasoning  Capability = "reasoning"
	CapVision     Capability = "vision"
	CapEmbeddings Capability = "embeddings"
)

// Card describes one model: identity, where its weights come from, and the
// shape numbers placement sizes memory from.
type Card struct {
	ID       string   `json:"model_id"` // the selectable alias
	Name     string   `json:"name,omitempty"`
	Repo     string   `json:"repo,omitempty"`     // e.g. hf:owner/name
	Files    []string `json:"files,omitempty"`    // GGUF file(s) within the repo
	Revision string   `json:"revision,omitempty"` // immutable commit hash
	Builtin  bool     `json:"builtin,omitempty"`

	Arch           string  `json:"architecture"`
	Layers         int     `json:"layers"`
	HiddenSize     int     `json:"hidden_size"`
	Heads          int     `json:"heads"`
	KVHeads        int     `json:"kv_heads"`
	HeadDim        int     `json:"head_dim"`
	VocabSize      int     `json:"vocab_size"`
	ContextLength  int     `json:"context_length"`
	StorageBytes   int64   `json:"storage_bytes"`
	LayerBytes     []int64 `json:"layer_bytes"`     // weight bytes of each block
	EmbeddingBytes int64   `json:"embedding_bytes"` // token_embd
	HeadBytes      int64   `json:"head_bytes"`      // output norm + output matrix (0 extra when tied)
	TiedEmbeddings bool    `json:"tied_embeddings"`

	Tasks              []string     `json:"tasks"`
	Capabilities       []Capability `json:"capabilities,omitempty"`
	CompatibleBackends []string     `json:"compatible_backends,omitempty"`
	BackendPreference  []string     `json:"backend_preference,omitempty"`
	ChatTemplate       string       `json:"chat_template,omitempty"` // overrides the GGUF's template
}

// KVBytesPerToken is the K and V cache size of one token across all layers
// with an F32 cache (the native engine's).
func (c Card) KVBytesPerToken() int64 {
	return int64(c.Layers) * 2 * int64(c.KVHeads) * int64(c.HeadDim) * 4
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)

// Validate checks a card's invariants.
func (c Card) Validate() error {
	switch {
	case !idPattern.MatchString(c.ID):
		return fmt.Errorf("catalog: model id %q must be 1-128 lowercase letters, digits and . _ : / -", c.ID)
	case c.Layers <= 0 || len(c.LayerBytes) != c.Layers:
		return fmt.Errorf("catalog: model %s: %d layers with %d layer sizes", c.ID, c.Layers, len(c.LayerBytes))
	case c.KVHeads <= 0 || c.HeadDim <= 0 || c.HiddenSize <= 0:
		return fmt.Errorf("catalog: model %s: shape is incomplete", c.ID)
	case c.ContextLength <= 0:
		return fmt.Errorf("catalog: model %s: context length %d", c.ID, c.ContextLength)
	}
	return nil
}
