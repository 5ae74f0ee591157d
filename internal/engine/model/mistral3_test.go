package model

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// TestSyntheticMistral3Reference checks mistral3 against llama.cpp's
// logits on the model `skulk dev synth --arch mistral3` writes
// (bench/synthref.sh mistral3), within the bounds of the other quantized
// references: the llama.cpp-mimicking path against the main prompts, exact
// F32 activations against llama.cpp's run on its own dequantized copy. The
// model's YaRN original context is 16, so the 33-token prompt and its
// generation reach positions 16, 32 and 48, where the query temperature
// steps up (1 + 0.1·ln 2, 0.1·ln 3, 0.1·ln 4), and the rope takes YaRN's
// ramp with its magnitude correction cancelled (log multiplier 1).
func TestSyntheticMistral3Reference(t *testing.T) {
	var ref struct {
		synthRef
		Model struct {
			SHA256  string `json:"sha256"`
			Command string `json:"command"`
		} `json:"model"`
	}
	readJSON(t, filepath.Join(repoRoot(), "testdata", "synthetic", "synth-mistral3.json"), &ref)
	if ref.Dequant == nil {
		t.Fatal("the reference has no dequant_f32 section")
	}
	path := referenceModel(t, "mistral3", ref.Model.SHA256, ref.Model.Command)
	s, _ := openShard(t, path, whole, Options{Threads: 2, F32Cache: true})
	if at := s.Config.AttnTemp; at.Scale != 0.1 || at.Floor != 16 {
		t.Fatalf("attention temperature %+v, want scale 0.1 from a floor of 16", at)
	}
	summary, st := checkStatsIn(t, s, ref.Prompts, ref.Tolerance.Mimic, 256)
	t.Logf("mimicking vs llama.cpp: %s; relative rms %.3g; %s", summary, relRMS(st, ref.Prompts), top1Agreement(t, s, ref.Prompts, 256))
	e, _ := openShard(t, path, whole, Options{Threads: 2, ExactActivations: true, F32Cache: true})
	summary, st = checkStatsIn(t, e, ref.Dequant.Prompts, ref.Tolerance.Dequant, 256)
	t.Logf("exact activations vs llama.cpp on the dequantized copy: %s; relative rms %.3g; %s",
		summary, relRMS(st, ref.Dequant.Prompts), top1Agreement(t, e, ref.Dequant.Prompts, 256))
}

// TestMistral3Config checks what ReadConfig takes from a mistral3 file's
// metadata, as llama.cpp's loader takes it: a Mistral Small 3.x file (no
// rope scaling, no temperature) reads as llama's; a Ministral 3 file's
// YaRN takes the betas and the log multiplier as written (the latter not
// divided by 0.1, as deepseek2's is), and its temperature the YaRN original
// context as floor, or the trained context when the file names none.
func TestMistral3Config(t *testing.T) {
	small := map[string]any{
		"block_count": uint32(40), "context_length": uint32(131072), "embedding_length": uint32(5120), "feed_forward_length": uint32(32768),
		"attention.head_count": uint32(32), "attention.head_count_kv": uint32(8),
		"attention.key_length": uint32(128), "attention.value_length": uint32(128),
		"attention.layer_norm_rms_epsilon": float32(1e-5), "rope.freq_base": float32(1e9), "vocab_size": uint32(131072),
	}
	ministral := map[string]any{
		"context_length": uint32(262144), "rope.freq_base": float32(1e6),
		"rope.scaling.type": "yarn", "rope.scaling.factor": float32(16), "rope.scaling.original_context_length": uint32(16384),
		"rope.scaling.yarn_beta_fast": float32(32), "rope.scaling.yarn_beta_slow": float32(1),
		"rope.scaling.yarn_log_multiplier": float32(1), "attention.temperature_scale": float32(0.1),
	}
	with := func(ms ...map[string]any) map[string]any {
		out := map[string]any{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		kv        map[string]any
		drop      string
		scaling   RopeScaling
		temp      AttnTemp
		wantError bool
	}{
		{name: "Mistral Small 3.2", kv: small, scaling: RopeScaling{AttnFactor: 1, BetaFast: 32, BetaSlow: 1}},
		{name: "Ministral 3", kv: with(small, ministral),
			scaling: RopeScaling{Type: "yarn", Factor: 16, OrigCtx: 16384, LogMul: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1},
			temp:    AttnTemp{Scale: 0.1, Floor: 16384}},
		{name: "betas and log multiplier read", kv: with(small, ministral, map[string]any{
			"rope.scaling.yarn_beta_fast": float32(16), "rope.scaling.yarn_beta_slow": float32(2), "rope.scaling.yarn_log_multiplier": float32(0.5)}),
			scaling: RopeScaling{Type: "yarn", Factor: 16, OrigCtx: 16384, LogMul: 0.5, AttnFactor: 1, BetaFast: 16, BetaSlow: 2},
			temp:    AttnTemp{Scale: 0.1, Floor: 16384}},
		{name: "temperature floor: the trained context", kv: with(small, ministral), drop: "rope.scaling.original_context_length",
			scaling: RopeScaling{Type: "yarn", Factor: 16, OrigCtx: 262144, LogMul: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1},
			temp:    AttnTemp{Scale: 0.1, Floor: 262144}},
		{name: "temperature floor of 0", kv: with(small, ministral, map[string]any{"rope.scaling.original_context_length": uint32(0)}), wantError: true},
		{name: "partial rope", kv: with(small, map[string]any{"rope.dimension_count": uint32(64)}), wantError: true},
		{name: "experts", kv: with(small, map[string]any{"expert_count": uint32(8)}), wantError: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := gguf.NewWriter()
			w.Set("general.architecture", "mistral3")
			for k, v := range c.kv {
				if k != c.drop {
					w.Set("mistral3."+k, v)
				}
			}
			var buf bytes.Buffer
			if _, err := w.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ReadConfig(f)
			if c.wantError {
				if err == nil {
					t.Fatalf("read %+v, want an error", cfg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.RopeNeoX || cfg.QKNorm || cfg.QKVBias || cfg.AttnScale != 0 || cfg.QScale != 0 || cfg.HeadDim != 128 || cfg.QDim() != 4096 ||
				cfg.RopeScaling != c.scaling || cfg.AttnTemp != c.temp {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

// TestAttnTempFactor checks the query temperature at the positions where
// it steps, in llama.cpp's arithmetic: 1 up to the floor, then
// 1 + scale·ln(⌊p/floor⌋ + 1).
func TestAttnTempFactor(t *testing.T) {
	at := AttnTemp{Scale: 0.1, Floor: 16384}
	for _, c := range []struct {
		pos  int
		want float32
	}{
		{0, 1}, {16383, 1},
		{16384, float32(1 + 0.1*math.Log(2))}, {32767, float32(1 + 0.1*math.Log(2))},
		{32768, float32(1 + 0.1*math.Log(3))}, {262143, float32(1 + 0.1*math.Log(16))},
	} {
		if got := at.factor(c.pos); got != c.want {
			t.Errorf("factor(%d) = %v, want %v", c.pos, got, c.want)
		}
	}
}
