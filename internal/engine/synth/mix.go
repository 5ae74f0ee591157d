package synth

import (
	"strings"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// Mix assigns each weight matrix of a synthetic model its tensor type, as a
// llama.cpp quantization preset does: Base, unless the name ends with one
// of Over's suffixes (the first that matches wins). Norms stay F32 and a
// router (ffn_gate_inp) F32 whatever the mix, as llama.cpp's quantizer
// leaves them.
type Mix struct {
	Name     string
	Base     tensor.Type
	Over     []MixRule
	FileType tensor.Type // the type general.file_type names
}

// MixRule gives the matrices whose names end with Suffix type Type.
type MixRule struct {
	Suffix string
	Type   tensor.Type
}

// Uniform is the mix that stores every matrix as t.
func Uniform(t tensor.Type) Mix { return Mix{Name: t.String(), Base: t, FileType: t} }

func (m Mix) typeOf(name string) tensor.Type {
	for _, r := range m.Over {
		if strings.HasSuffix(name, r.Suffix) {
			return r.Type
		}
	}
	return m.Base
}

// Shipped is the mix the real files of arch are most often downloaded in,
// which `skulk dev synth --arch A` uses when no --type is given. For the
// MoE families that is Q4_K_M: Q4_K, with Q6_K for the value projections,
// the down projections and the output head; for gpt-oss, MXFP4_MOE, as
// llama.cpp quantizes its real files. (Many big-model files use Q3_K or
// IQ4_XS, which the engine also runs; the MoE families stay at Q4_K_M,
// their most downloaded files' mix, which their committed llama.cpp
// references were made from: testdata/synthetic/synth-ARCH.json pins the
// file's sha256.)
func Shipped(arch string) (Mix, bool) {
	q4km := Mix{Name: "Q4_K_M", Base: tensor.Q4_K, FileType: tensor.Q4_K, Over: []MixRule{
		{"attn_v.weight", tensor.Q6_K}, {"ffn_down_exps.weight", tensor.Q6_K}, {"ffn_down.weight", tensor.Q6_K},
		{"ffn_down_shexp.weight", tensor.Q6_K},
		{"output.weight", tensor.Q6_K},
	}}
	switch arch {
	case "qwen3moe", "glm4moe", "deepseek2", "mistral3", "llama4":
		// mistral3 (Ministral 3, Mistral Small 3.x): llama's blocks,
		// the value and down projections and the untied head Q6_K
		// (llama.cpp raises some of them; here all).
		return q4km, true
	case "phi3":
		// llama.cpp's Q4_K_M of a fused q/k/v tensor is Q5_K (it has
		// no attn_v to raise to Q6_K), the down projections and the
		// head Q6_K (llama.cpp raises every third and the outer
		// eighths of the down projections; here all of them).
		return Mix{Name: "Q4_K_M", Base: tensor.Q4_K, FileType: tensor.Q4_K, Over: []MixRule{
			{"attn_qkv.weight", tensor.Q5_K}, {"ffn_down.weight", tensor.Q6_K}, {"output.weight", tensor.Q6_K},
		}}, true
	case "gemma3":
		// llama.cpp's Q4_K_M of a tied model raises token_embd, which
		// is also the head, to Q6_K, with the value and down
		// projections (every one here; llama.cpp raises some).
		return Mix{Name: "Q4_K_M", Base: tensor.Q4_K, FileType: tensor.Q4_K, Over: []MixRule{
			{"token_embd.weight", tensor.Q6_K}, {"attn_v.weight", tensor.Q6_K}, {"ffn_down.weight", tensor.Q6_K},
		}}, true
	case "gpt-oss":
		// llama.cpp's MXFP4_MOE, which gpt-oss ships in: the experts
		// MXFP4, every other matrix Q8_0.
		return Mix{Name: "MXFP4_MOE", Base: tensor.Q8_0, FileType: tensor.MXFP4, Over: []MixRule{
			{"_exps.weight", tensor.MXFP4},
		}}, true
	}
	return Mix{}, false
}
