// Package catalog knows which models a node can serve: their cards (what a
// model is and what placing it needs) and where their weights are.
//
// Cards come from Sources merged in precedence order (Build): the
// operator's custom cards (TOML files), then installed cards (the
// .skulk/installed-card.json sidecar beside each complete download, trusted
// only while its SHA-256 manifest verifies), then the built-in demo card.
// Store ties the sources to a node's directories and adds the mutations
// (AddCustom, RemoveCustom, Import, Publish, RemoveArtifacts). Reading the
// catalog never writes to disk.
//
// Card values are immutable by convention. A Store is safe for concurrent
// use. The package reads no environment variables: directories arrive in
// StoreConfig.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/control/placement"
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

var knownCapabilities = []Capability{CapTools, CapReasoning, CapVision, CapEmbeddings}

// KV cache element types a card may ask for (Runtime.KVCacheType).
var knownKVTypes = []string{"", placement.KVCacheF32, placement.KVCacheF16, placement.KVCacheQ8_0, placement.KVCacheQ4_0}

// Card describes one model: identity, where its weights come from, and the
// shape numbers placement sizes memory from. The TOML names are the card
// file format documented in docs/model-cards.md; the JSON names are the
// sidecar's and the API's.
type Card struct {
	ID       string   `json:"model_id" toml:"model_id"` // the selectable alias
	Name     string   `json:"name,omitempty" toml:"name,omitempty"`
	Repo     string   `json:"source_repository,omitempty" toml:"source_repository,omitempty"` // Hugging Face owner/name
	Files    []string `json:"files,omitempty" toml:"files,omitempty"`                         // GGUF file(s) within the repo; split GGUFs list every part
	Revision string   `json:"source_revision,omitempty" toml:"source_revision,omitempty"`     // immutable commit hash
	Builtin  bool     `json:"builtin,omitempty" toml:"-"`

	Arch       string `json:"architecture" toml:"architecture"`
	Layers     int    `json:"layers" toml:"layers"`
	HiddenSize int    `json:"hidden_size" toml:"hidden_size"`
	Heads      int    `json:"heads" toml:"heads,omitzero"`
	KVHeads    int    `json:"kv_heads" toml:"kv_heads"`
	HeadDim    int    `json:"head_dim" toml:"head_dim"`
	// ValueDim is the cached value width per KV head where it differs from
	// HeadDim's key width: multi-head latent attention caches a latent of
	// ValueDim values and HeadDim keys (the latent plus the rotated key).
	ValueDim       int     `json:"value_dim,omitempty" toml:"value_dim,omitzero"`
	VocabSize      int     `json:"vocab_size" toml:"vocab_size,omitzero"`
	ContextLength  int     `json:"context_length" toml:"context_length"`
	StorageBytes   int64   `json:"storage_bytes" toml:"storage_bytes"`
	LayerBytes     []int64 `json:"layer_bytes" toml:"layer_bytes,omitempty"`        // weight bytes of each block
	EmbeddingBytes int64   `json:"embedding_bytes" toml:"embedding_bytes,omitzero"` // token_embd
	HeadBytes      int64   `json:"head_bytes" toml:"head_bytes,omitzero"`           // output norm + output matrix (0 extra when tied)
	TiedEmbeddings bool    `json:"tied_embeddings" toml:"tied_embeddings,omitempty"`

	Tasks              []string     `json:"tasks" toml:"tasks"`
	Capabilities       []Capability `json:"capabilities,omitempty" toml:"capabilities,omitempty"`
	CompatibleBackends []string     `json:"compatible_backends,omitempty" toml:"compatible_backends,omitempty"`
	BackendPreference  []string     `json:"backend_preference,omitempty" toml:"backend_preference,omitempty"`
	Runtime            Runtime      `json:"runtime,omitzero" toml:"runtime,omitempty"`
	ChatTemplate       string       `json:"chat_template,omitempty" toml:"chat_template,omitempty"` // overrides the GGUF's template
}

// Runtime holds the engine knobs a card may set. Zero means "the default".
type Runtime struct {
	// MaxPipelineSplitLayer caps the layer index a pipeline split may start
	// a stage at (0: no cap).
	MaxPipelineSplitLayer int `json:"max_pipeline_split_layer,omitempty" toml:"max_pipeline_split_layer,omitzero"`
	// ServedContext is the context window placed by default (0: the
	// cluster's served-context default, capped by context_length).
	ServedContext int `json:"served_context,omitempty" toml:"served_context,omitzero"`
	// KVCacheType is the KV cache element type: "f32", "f16", "q8_0" or
	// "q4_0" ("": the engine's default, f16). A placement may override it
	// (its cache_type).
	KVCacheType string `json:"kv_cache_type,omitempty" toml:"kv_cache_type,omitempty"`
	// Speculative turns on speculative decoding of greedy requests:
	// SpeculativeLookup drafts by prompt lookup (no draft model). A
	// DraftModel drafts instead when set.
	Speculative string `json:"speculative,omitempty" toml:"speculative,omitempty"`
	// DraftModel is the id of a catalog model with the same vocabulary that
	// drafts for this one (installed on the node with it).
	DraftModel string `json:"draft_model,omitempty" toml:"draft_model,omitempty"`
	// DraftMax caps the tokens drafted per verification pass (0: 8).
	DraftMax int `json:"draft_max,omitempty" toml:"draft_max,omitzero"`
}

// SpeculativeLookup is Runtime.Speculative's prompt-lookup mode.
const SpeculativeLookup = "lookup"

// KVBytesPerTokenLayer is the K and V cache a runner allocates for one token
// in one layer, in the card's cache type (placement.KVBytesPerTokenLayer:
// fp16 unless runtime.kv_cache_type is f32).
func (c Card) KVBytesPerTokenLayer() int64 {
	k := placement.KVBytesPerTokenLayer(c.KVHeads, c.HeadDim, c.Runtime.KVCacheType)
	if c.ValueDim > 0 && c.ValueDim != c.HeadDim {
		// KVBytesPerTokenLayer counts K and V of one width: half of it
		// is K; V is half of the same at the value width.
		return k/2 + placement.KVBytesPerTokenLayer(c.KVHeads, c.ValueDim, c.Runtime.KVCacheType)/2
	}
	return k
}

// WithCacheType is the card with its KV cache type replaced by t (a
// placement's cache_type); "" keeps the card's.
func (c Card) WithCacheType(t string) Card {
	if t != "" {
		c.Runtime.KVCacheType = t
	}
	return c
}

// KVBytesPerToken is the K and V cache size of one token across all layers.
func (c Card) KVBytesPerToken() int64 {
	return c.KVBytesPerTokenLayer() * int64(max(c.Layers, 0))
}

// Digest is the SHA-256 of the card's canonical JSON: two cards with the same
// digest select the same bytes and run them the same way.
func (c Card) Digest() string {
	b, err := json.Marshal(c)
	if err != nil { // a Card has only plain fields; Marshal cannot fail
		panic(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var (
	idPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)
	repoPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	splitPattern    = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)
)

// Validate checks a card's invariants.
func (c Card) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("catalog: model %s: %s", c.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case !idPattern.MatchString(c.ID):
		return fmt.Errorf("catalog: model id %q must be 1-128 lowercase letters, digits and . _ : / -", c.ID)
	case c.Layers <= 0 || len(c.LayerBytes) != c.Layers:
		return bad("%d layers with %d layer sizes", c.Layers, len(c.LayerBytes))
	case c.KVHeads <= 0 || c.HeadDim <= 0 || c.HiddenSize <= 0:
		return bad("shape is incomplete (hidden_size, kv_heads and head_dim must be positive)")
	case c.ValueDim < 0:
		return bad("value_dim %d is negative", c.ValueDim)
	case c.ContextLength <= 0:
		return bad("context length %d", c.ContextLength)
	case c.StorageBytes < 0 || c.EmbeddingBytes < 0 || c.HeadBytes < 0:
		return bad("negative byte sizes")
	case len(c.Tasks) == 0:
		return bad("tasks is empty (e.g. tasks = [\"text-generation\"])")
	}
	for i, b := range c.LayerBytes {
		if b < 0 {
			return bad("layer_bytes[%d] is negative", i)
		}
	}
	for _, cp := range c.Capabilities {
		if !slices.Contains(knownCapabilities, cp) {
			return bad("unknown capability %q (known: tools, reasoning, vision, embeddings)", cp)
		}
	}
	if !slices.Contains(knownKVTypes, c.Runtime.KVCacheType) {
		return bad("runtime.kv_cache_type %q (use f16, f32, q8_0 or q4_0)", c.Runtime.KVCacheType)
	}
	if t := c.Runtime.KVCacheType; t == placement.KVCacheQ8_0 || t == placement.KVCacheQ4_0 {
		switch {
		case c.HeadDim%32 != 0:
			return bad("runtime.kv_cache_type %s needs head_dim in whole 32-element blocks, and head_dim is %d (use f16 or f32)", t, c.HeadDim)
		case c.ValueDim%32 != 0:
			return bad("runtime.kv_cache_type %s needs value_dim in whole 32-element blocks, and value_dim is %d (use f16 or f32)", t, c.ValueDim)
		}
	}
	switch {
	case c.Runtime.Speculative != "" && c.Runtime.Speculative != SpeculativeLookup:
		return bad("runtime.speculative %q (use %q, or name a runtime.draft_model)", c.Runtime.Speculative, SpeculativeLookup)
	case c.Runtime.DraftModel != "" && !idPattern.MatchString(c.Runtime.DraftModel):
		return bad("runtime.draft_model %q is not a model id", c.Runtime.DraftModel)
	case c.Runtime.DraftModel == c.ID:
		return bad("runtime.draft_model names the model itself")
	case c.Runtime.DraftMax < 0 || c.Runtime.DraftMax > 64:
		return bad("runtime.draft_max %d is outside 0..64", c.Runtime.DraftMax)
	}
	if c.Runtime.MaxPipelineSplitLayer < 0 || c.Runtime.MaxPipelineSplitLayer > c.Layers {
		return bad("runtime.max_pipeline_split_layer %d is outside 0..%d", c.Runtime.MaxPipelineSplitLayer, c.Layers)
	}
	if c.Runtime.ServedContext < 0 || c.Runtime.ServedContext > c.ContextLength {
		return bad("runtime.served_context %d is outside 0..context_length %d", c.Runtime.ServedContext, c.ContextLength)
	}
	if c.Repo == "" {
		return nil
	}
	if !repoPattern.MatchString(c.Repo) || strings.Contains(c.Repo, "..") {
		return bad("source_repository %q is not a Hugging Face owner/name", c.Repo)
	}
	if !revisionPattern.MatchString(c.Revision) {
		return bad("source_revision %q must be a full 40-character commit hash (`skulk models add` resolves a branch to one)", c.Revision)
	}
	if len(c.Files) == 0 {
		return bad("files is empty: name the GGUF file (or every part of a split GGUF)")
	}
	for _, f := range c.Files {
		if err := checkRepoPath(f); err != nil {
			return bad("%v", err)
		}
	}
	return checkSplit(c.Files)
}

// checkRepoPath accepts a clean relative path of a .gguf file.
func checkRepoPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, ".skulk/") {
		return fmt.Errorf("file %q is not a clean repository-relative path", p)
	}
	if !strings.HasSuffix(strings.ToLower(p), ".gguf") {
		return fmt.Errorf("file %q is not a .gguf file", p)
	}
	return nil
}

// checkSplit checks that split GGUF parts (NAME-00001-of-0000N.gguf) are
// listed completely and in order, and that a split file is not mixed with
// other files.
func checkSplit(files []string) error {
	m := splitPattern.FindStringSubmatch(files[0])
	if m == nil {
		if len(files) > 1 {
			return fmt.Errorf("catalog: files %v: list one GGUF file, or every part of one split GGUF", files)
		}
		return nil
	}
	n, _ := strconv.Atoi(m[3])
	if n < 1 || len(files) != n {
		return fmt.Errorf("catalog: files: %s is part of a %d-part split GGUF but %d files are listed", files[0], n, len(files))
	}
	for i, f := range files {
		want := fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i+1, n)
		if f != want {
			return fmt.Errorf("catalog: files[%d] is %q, want %q (split parts in order)", i, f, want)
		}
	}
	return nil
}

// SplitParts returns every part name of the split GGUF that file belongs to,
// or just file when it is not a split part.
func SplitParts(file string) []string {
	m := splitPattern.FindStringSubmatch(file)
	if m == nil {
		return []string{file}
	}
	n, _ := strconv.Atoi(m[3])
	if n < 1 || n > 9999 {
		return []string{file}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i+1, n)
	}
	return out
}
