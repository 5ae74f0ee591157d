package catalog

import (
	"errors"
	"fmt"
	"slices"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Wire is the card as the cluster replicates it (event.AddModel). A
// built-in card is never replicated: every node has it.
func (c Card) Wire() event.ModelCard {
	caps := make([]string, len(c.Capabilities))
	for i, cp := range c.Capabilities {
		caps[i] = string(cp)
	}
	layers := make([]int64, len(c.LayerBytes))
	copy(layers, c.LayerBytes)
	return event.ModelCard{
		ID: ids.ModelID(c.ID), Name: c.Name, Repo: c.Repo, Files: slices.Clone(c.Files), Revision: c.Revision,
		Arch: c.Arch, Layers: int64(c.Layers), HiddenSize: int64(c.HiddenSize), Heads: int64(c.Heads),
		KVHeads: int64(c.KVHeads), HeadDim: int64(c.HeadDim), ValueDim: int64(c.ValueDim), VocabSize: int64(c.VocabSize),
		ContextLength: int64(c.ContextLength), StorageBytes: c.StorageBytes, LayerBytes: layers,
		EmbeddingBytes: c.EmbeddingBytes, HeadBytes: c.HeadBytes, TiedEmbeddings: c.TiedEmbeddings,
		Tasks: slices.Clone(c.Tasks), Capabilities: caps,
		CompatibleBackends: slices.Clone(c.CompatibleBackends), BackendPreference: slices.Clone(c.BackendPreference),
		Runtime: event.ModelRuntime{
			MaxPipelineSplitLayer: int64(c.Runtime.MaxPipelineSplitLayer), ServedContext: int64(c.Runtime.ServedContext),
			KVCacheType: c.Runtime.KVCacheType, Speculative: c.Runtime.Speculative, DraftModel: c.Runtime.DraftModel,
			DraftMax: int64(c.Runtime.DraftMax),
		},
		ChatTemplate: c.ChatTemplate,
	}
}

// FromWire is the card a replicated card describes, validated as any card
// is. Empty lists come back nil, as a card read from a file has them, so
// the card's Digest is the one it had before it travelled.
func FromWire(w event.ModelCard) (Card, error) {
	toInt := func(v int64) int { return int(min(v, int64(maxInt))) }
	var caps []Capability
	for _, cp := range w.Capabilities {
		caps = append(caps, Capability(cp))
	}
	c := Card{
		ID: string(w.ID), Name: w.Name, Repo: w.Repo, Files: nilIfEmpty(w.Files), Revision: w.Revision,
		Arch: w.Arch, Layers: toInt(w.Layers), HiddenSize: toInt(w.HiddenSize), Heads: toInt(w.Heads),
		KVHeads: toInt(w.KVHeads), HeadDim: toInt(w.HeadDim), ValueDim: toInt(w.ValueDim), VocabSize: toInt(w.VocabSize),
		ContextLength: toInt(w.ContextLength), StorageBytes: w.StorageBytes, LayerBytes: slices.Clone(w.LayerBytes),
		EmbeddingBytes: w.EmbeddingBytes, HeadBytes: w.HeadBytes, TiedEmbeddings: w.TiedEmbeddings,
		Tasks: nilIfEmpty(w.Tasks), Capabilities: caps,
		CompatibleBackends: nilIfEmpty(w.CompatibleBackends), BackendPreference: nilIfEmpty(w.BackendPreference),
		Runtime: Runtime{
			MaxPipelineSplitLayer: toInt(w.Runtime.MaxPipelineSplitLayer), ServedContext: toInt(w.Runtime.ServedContext),
			KVCacheType: w.Runtime.KVCacheType, Speculative: w.Runtime.Speculative, DraftModel: w.Runtime.DraftModel,
			DraftMax: toInt(w.Runtime.DraftMax),
		},
		ChatTemplate: w.ChatTemplate,
	}
	if err := c.Validate(); err != nil {
		return Card{}, fmt.Errorf("replicated card: %w", err)
	}
	return c, nil
}

const maxInt = int(^uint(0) >> 1)

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// Replicated is the source of the cluster's replicated cards, behind a
// node's own: a node's custom and installed cards describe its own bytes.
type Replicated []event.ModelCard

// Cards returns the cards that convert; the others are reported.
func (r Replicated) Cards() ([]Card, error) {
	var out []Card
	var errs []error
	for _, w := range r {
		c, err := FromWire(w)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}
