package catalog

import (
	"fmt"
	"strings"

	"github.com/skulk/skulk/internal/engine/encoder"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
)

// CardFromGGUF fills a card's shape and sizes from a GGUF header, so a
// placement can be sized before (or without) reading the weights.
func CardFromGGUF(id string, f *gguf.File) (Card, error) {
	return CardFromHeaders(id, []*gguf.File{f})
}

// CardFromHeaders fills a card from the headers of every part of a model,
// in order: one for a single file, N for a split GGUF. The metadata comes
// from the first part; tensor sizes are summed over all parts. Headers from
// gguf.ParseHeader (a file prefix) are enough.
func CardFromHeaders(id string, parts []*gguf.File) (Card, error) {
	if len(parts) == 0 {
		return Card{}, fmt.Errorf("catalog: model %s: no GGUF headers", id)
	}
	f := parts[0]
	if f.Architecture() == "bert" {
		return encoderCard(id, parts)
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return Card{}, fmt.Errorf("catalog: model %s: %w", id, err)
	}
	c := Card{
		ID: id, Arch: cfg.Arch, Layers: cfg.NLayer, HiddenSize: cfg.NEmbd, Heads: cfg.NHead,
		KVHeads: cfg.NHeadKV, HeadDim: cfg.HeadDim, VocabSize: cfg.NVocab, ContextLength: cfg.ContextLength,
		LayerBytes: make([]int64, cfg.NLayer), Tasks: []string{"text-generation"},
		CompatibleBackends: []string{"native-cpu"},
	}
	if cfg.VHeadDim > 0 && cfg.VHeadDim != cfg.HeadDim {
		c.ValueDim = cfg.VHeadDim // latent attention's cache
	}
	if name, ok := f.String("general.name"); ok {
		c.Name = name
	}
	hasOutput := false
	for _, p := range parts {
		c.StorageBytes += fileBytes(p)
		for _, t := range p.Tensors {
			switch {
			case t.Name == "token_embd.weight":
				c.EmbeddingBytes += t.Size
			case t.Name == "output.weight" || t.Name == "output_norm.weight":
				hasOutput = hasOutput || t.Name == "output.weight"
				c.HeadBytes += t.Size
			case strings.HasPrefix(t.Name, "blk."):
				var b int
				if _, err := fmt.Sscanf(t.Name, "blk.%d.", &b); err == nil && b >= 0 && b < cfg.NLayer {
					c.LayerBytes[b] += t.Size
				}
			}
		}
	}
	c.TiedEmbeddings = !hasOutput
	if tmpl, ok := f.String("tokenizer.chat_template"); ok && tmpl != "" {
		c.Capabilities = append(c.Capabilities, capabilitiesFromTemplate(tmpl)...)
	}
	return c, c.Validate()
}

// fileBytes is the size of the GGUF file whose header is f: its header and
// metadata (up to the data section) plus the data section up to the end of
// its last tensor. That is the file's size on disk, less any padding after
// the last tensor, which writers do not add. The tokenizer's vocabulary and
// other metadata count: a card's storage_bytes is what the download and the
// disk hold, not only the tensors.
func fileBytes(f *gguf.File) int64 {
	end := int64(0)
	for _, t := range f.Tensors {
		end = max(end, int64(t.Offset)+t.Size)
	}
	return f.DataOffset + end
}

// capabilitiesFromTemplate infers what a chat template supports.
func capabilitiesFromTemplate(t string) []Capability {
	var caps []Capability
	if strings.Contains(t, "tools") {
		caps = append(caps, CapTools)
	}
	// gpt-oss's harmony template reasons in its analysis channel;
	// Mistral's reasoning models (Ministral 3 Reasoning, Magistral)
	// between [THINK] and [/THINK].
	if strings.Contains(t, "<think>") || strings.Contains(t, "reasoning_content") || strings.Contains(t, "<|channel|>analysis") ||
		strings.Contains(t, "[THINK]") {
		caps = append(caps, CapReasoning)
	}
	return caps
}

// encoderCard cards an embedding model (a bert encoder): it has no KV cache
// to size and no head, and serves the embeddings task only.
func encoderCard(id string, parts []*gguf.File) (Card, error) {
	f := parts[0]
	cfg, err := encoder.ReadConfig(f)
	if err != nil {
		return Card{}, fmt.Errorf("catalog: model %s: %w", id, err)
	}
	c := Card{
		ID: id, Arch: "bert", Layers: cfg.NLayer, HiddenSize: cfg.NEmbd, Heads: cfg.NHead, KVHeads: cfg.NHead,
		HeadDim: cfg.HeadDim, LayerBytes: make([]int64, cfg.NLayer), Tasks: []string{"embeddings"},
		Capabilities: []Capability{CapEmbeddings}, CompatibleBackends: []string{"native-cpu"},
	}
	if name, ok := f.String("general.name"); ok {
		c.Name = name
	}
	for _, p := range parts {
		c.StorageBytes += fileBytes(p)
		for _, t := range p.Tensors {
			var b int
			if _, err := fmt.Sscanf(t.Name, "blk.%d.", &b); err == nil && b >= 0 && b < cfg.NLayer {
				c.LayerBytes[b] += t.Size
				continue
			}
			c.EmbeddingBytes += t.Size // token, position and type embeddings and their norm
			if len(t.Dims) == 2 {
				switch t.Name {
				case "token_embd.weight":
					c.VocabSize = int(t.Dims[1])
				case "position_embd.weight":
					c.ContextLength = int(t.Dims[1])
				}
			}
		}
	}
	return c, c.Validate()
}
