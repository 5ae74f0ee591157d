package model

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// TestMoEConfigErrors checks that malformed mixture-of-experts and latent
// attention metadata is refused with an error naming the problem, and
// that the well-formed headers read.
func TestMoEConfigErrors(t *testing.T) {
	base := func(arch string) map[string]any {
		m := map[string]any{
			"general.architecture":                     arch,
			arch + ".block_count":                      uint32(4),
			arch + ".embedding_length":                 uint32(256),
			arch + ".attention.head_count":             uint32(4),
			arch + ".attention.head_count_kv":          uint32(2),
			arch + ".attention.layer_norm_rms_epsilon": float32(1e-6),
			arch + ".expert_count":                     uint32(8),
			arch + ".expert_used_count":                uint32(2),
			arch + ".expert_feed_forward_length":       uint32(256),
		}
		if arch != "qwen3moe" {
			m[arch+".expert_shared_count"] = uint32(1)
		}
		if arch == "gpt-oss" {
			delete(m, arch+".expert_shared_count")
			m[arch+".attention.sliding_window"] = uint32(128)
		}
		if arch == "deepseek2" {
			m[arch+".attention.kv_lora_rank"] = uint32(256)
			m[arch+".attention.key_length_mla"] = uint32(128)
			m[arch+".attention.value_length_mla"] = uint32(64)
			m[arch+".rope.dimension_count"] = uint32(64)
		}
		return m
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	for _, c := range []struct {
		name string
		meta map[string]any
		want string // "" = reads
	}{
		{"qwen3moe", base("qwen3moe"), ""},
		{"glm4moe", base("glm4moe"), ""},
		{"deepseek2", base("deepseek2"), ""},
		{"gpt-oss", base("gpt-oss"), ""},
		{"gpt-oss-no-window", with(base("gpt-oss"), "gpt-oss.attention.sliding_window", nil), "sliding_window"},
		{"gpt-oss-swa-base", with(base("gpt-oss"), "gpt-oss.rope.freq_base_swa", float32(5e5)), "freq_base_swa"},
		{"gpt-oss-swa-pattern-array", with(base("gpt-oss"), "gpt-oss.attention.sliding_window_pattern", []int32{1, 0}), "per-layer"},
		{"more-used-than-experts", with(base("qwen3moe"), "qwen3moe.expert_used_count", uint32(9)), "experts per token"},
		{"no-expert-count", with(base("qwen3moe"), "qwen3moe.expert_count", nil), "expert_count"},
		{"no-expert-width", with(base("glm4moe"), "glm4moe.expert_feed_forward_length", nil), "expert_feed_forward_length"},
		{"unknown-gating", with(base("glm4moe"), "glm4moe.expert_gating_func", uint32(7)), "gating function"},
		{"mrope", with(base("glm4moe"), "glm4moe.rope.dimension_sections", []int32{8, 8, 16, 0}), "M-RoPE"},
		{"all-nextn", with(base("glm4moe"), "glm4moe.nextn_predict_layers", uint32(4)), "next-token-prediction"},
		{"legacy-mla", with(base("deepseek2"), "deepseek2.attention.key_length_mla", nil), "attn_kv_b"},
		{"no-kv-lora", with(base("deepseek2"), "deepseek2.attention.kv_lora_rank", nil), "kv_lora_rank"},
		{"uneven-groups", with(base("deepseek2"), "deepseek2.expert_group_count", uint32(3), "deepseek2.expert_group_used_count", uint32(1)), "expert groups"},
		{"one-expert-groups", with(base("deepseek2"), "deepseek2.expert_group_count", uint32(8), "deepseek2.expert_group_used_count", uint32(2)), "expert groups"},
		{"rope-too-wide", with(base("deepseek2"), "deepseek2.rope.dimension_count", uint32(128)), "key width"},
		{"longrope", with(base("deepseek2"), "deepseek2.rope.scaling.type", "longrope"), "not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := gguf.NewWriter()
			for k, v := range c.meta {
				w.Set(k, v)
			}
			p := filepath.Join(t.TempDir(), "h.gguf")
			if err := w.WriteFile(p); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = ReadConfig(f)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
