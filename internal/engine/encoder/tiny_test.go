package encoder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// tiny describes a small random bert model written by the tests, so that the
// forward pass and the error paths are checked without the shared models.
type tiny struct {
	arch                      string
	nEmbd, nHead, nFF, nLayer int
	nPos                      int
	headCountKV               int // 0: no head_count_kv key
	causal                    bool
	pooling                   int // < 0: no bert.pooling_type key
	eps                       float32
	noTypes                   bool                // no token_types.weight
	tokEmbdF16                bool                // token_embd.weight in F16, as in synth-bert
	skip                      map[string]bool     // metadata keys and tensors left out
	dims                      map[string][]uint64 // tensors written with other dims (zero-filled)
	seed                      uint64
	w                         map[string][]float32 // filled by write: every tensor's values
}

var tinyVocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁hello", "▁world", "s", "▁the", "▁.", "▁fox", "▁cat", "ing", "▁run"}

func defaultTiny() tiny {
	return tiny{arch: "bert", nEmbd: 32, nHead: 4, nFF: 64, nLayer: 2, nPos: 16, pooling: 1, eps: 1e-12, seed: 7, tokEmbdF16: true}
}

// write builds the GGUF in memory and parses it.
func (s *tiny) write(t testing.TB) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(s.encode(t))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// encode builds the GGUF file's bytes.
func (s *tiny) encode(t testing.TB) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(s.seed, 1))
	w := gguf.NewWriter()
	set := func(k string, v any) {
		if !s.skip[k] {
			w.Set(k, v)
		}
	}
	set("general.architecture", s.arch)
	set("bert.context_length", uint32(s.nPos))
	set("bert.embedding_length", uint32(s.nEmbd))
	set("bert.block_count", uint32(s.nLayer))
	set("bert.feed_forward_length", uint32(s.nFF))
	set("bert.attention.head_count", uint32(s.nHead))
	if s.causal {
		set("bert.attention.causal", true)
	} else {
		set("bert.attention.causal", false)
	}
	if s.headCountKV != 0 {
		set("bert.attention.head_count_kv", uint32(s.headCountKV))
	}
	set("bert.attention.layer_norm_epsilon", s.eps)
	if s.pooling >= 0 {
		set("bert.pooling_type", uint32(s.pooling))
	}
	types := make([]int32, len(tinyVocab))
	for i, tok := range tinyVocab {
		types[i] = 1
		if tok[0] == '[' {
			types[i] = 3
		}
	}
	set("tokenizer.ggml.model", "bert")
	set("tokenizer.ggml.pre", "bert-bge")
	set("tokenizer.ggml.tokens", tinyVocab)
	set("tokenizer.ggml.token_type", types)
	set("tokenizer.ggml.unknown_token_id", uint32(1))
	set("tokenizer.ggml.bos_token_id", uint32(2)) // the tokenizer defaults [CLS] to 101
	set("tokenizer.ggml.cls_token_id", uint32(2))
	set("tokenizer.ggml.seperator_token_id", uint32(3))
	set("tokenizer.ggml.padding_token_id", uint32(0))
	set("tokenizer.ggml.mask_token_id", uint32(4))

	s.w = map[string][]float32{}
	add := func(name string, dims []uint64, typ tensor.Type, std, mean float64) {
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + std*r.NormFloat64())
		}
		if d, ok := s.dims[name]; ok {
			dims = d
			n = 1
			for _, x := range d {
				n *= int(x)
			}
			v = make([]float32, n)
		}
		if s.skip[name] {
			return
		}
		data, err := tensor.Quantize(typ, v)
		if err != nil {
			t.Fatal(err)
		}
		if typ == tensor.F16 { // the engine sees the rounded values
			for i := range v {
				v[i] = tensor.F16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
			}
		}
		s.w[name] = v
		w.AddTensor(name, typ, dims, data)
	}
	e, ff := uint64(s.nEmbd), uint64(s.nFF)
	tokType := tensor.F32
	if s.tokEmbdF16 {
		tokType = tensor.F16
	}
	add("token_embd.weight", []uint64{e, uint64(len(tinyVocab))}, tokType, 0.4, 0)
	if !s.noTypes {
		add("token_types.weight", []uint64{e, 2}, tensor.F32, 0.4, 0)
	}
	add("position_embd.weight", []uint64{e, uint64(s.nPos)}, tensor.F32, 0.4, 0)
	add("token_embd_norm.weight", []uint64{e}, tensor.F32, 0.2, 1)
	add("token_embd_norm.bias", []uint64{e}, tensor.F32, 0.1, 0)
	for l := range s.nLayer {
		p := func(n string) string { return fmt.Sprintf("blk.%d.%s", l, n) }
		for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			add(p(m+".weight"), []uint64{e, e}, tensor.F32, 0.1, 0)
			add(p(m+".bias"), []uint64{e}, tensor.F32, 0.1, 0)
		}
		add(p("attn_output_norm.weight"), []uint64{e}, tensor.F32, 0.2, 1)
		add(p("attn_output_norm.bias"), []uint64{e}, tensor.F32, 0.1, 0)
		add(p("ffn_up.weight"), []uint64{e, ff}, tensor.F32, 0.1, 0)
		add(p("ffn_up.bias"), []uint64{ff}, tensor.F32, 0.1, 0)
		add(p("ffn_down.weight"), []uint64{ff, e}, tensor.F32, 0.1, 0)
		add(p("ffn_down.bias"), []uint64{e}, tensor.F32, 0.1, 0)
		add(p("layer_output_norm.weight"), []uint64{e}, tensor.F32, 0.2, 1)
		add(p("layer_output_norm.bias"), []uint64{e}, tensor.F32, 0.1, 0)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// reference64 is a textbook float64 BERT forward pass over the weights write
// recorded, with the exact tanh GELU. It returns the per-token outputs.
func (s *tiny) reference64(ids []int32) [][]float64 {
	d, ff, hd := s.nEmbd, s.nFF, s.nEmbd/s.nHead
	w := func(n string) []float64 {
		v := s.w[n]
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	ln := func(x, g, b []float64) []float64 {
		var mean, v float64
		for _, a := range x {
			mean += a
		}
		mean /= float64(len(x))
		for _, a := range x {
			v += (a - mean) * (a - mean)
		}
		v /= float64(len(x))
		out := make([]float64, len(x))
		for i, a := range x {
			out[i] = (a-mean)/math.Sqrt(v+float64(s.eps))*g[i] + b[i]
		}
		return out
	}
	lin := func(m, b []float64, x []float64, rows int) []float64 {
		cols := len(x)
		out := make([]float64, rows)
		for r := range rows {
			acc := b[r]
			for c := range cols {
				acc += m[r*cols+c] * x[c]
			}
			out[r] = acc
		}
		return out
	}
	tok, pos := w("token_embd.weight"), w("position_embd.weight")
	var typ []float64
	if !s.noTypes {
		typ = w("token_types.weight")
	}
	x := make([][]float64, len(ids))
	for t, id := range ids {
		row := make([]float64, d)
		for j := range d {
			row[j] = tok[int(id)*d+j] + pos[t*d+j]
			if typ != nil {
				row[j] += typ[j]
			}
		}
		x[t] = ln(row, w("token_embd_norm.weight"), w("token_embd_norm.bias"))
	}
	for l := range s.nLayer {
		p := func(n string) []float64 { return w(fmt.Sprintf("blk.%d.%s", l, n)) }
		q, k, v := make([][]float64, len(ids)), make([][]float64, len(ids)), make([][]float64, len(ids))
		for t := range ids {
			q[t] = lin(p("attn_q.weight"), p("attn_q.bias"), x[t], d)
			k[t] = lin(p("attn_k.weight"), p("attn_k.bias"), x[t], d)
			v[t] = lin(p("attn_v.weight"), p("attn_v.bias"), x[t], d)
		}
		next := make([][]float64, len(ids))
		for i := range ids {
			att := make([]float64, d)
			for h := range s.nHead {
				sc := make([]float64, len(ids))
				mx := math.Inf(-1)
				for j := range ids {
					for c := range hd {
						sc[j] += q[i][h*hd+c] * k[j][h*hd+c]
					}
					sc[j] /= math.Sqrt(float64(hd))
					mx = max(mx, sc[j])
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j := range ids {
					for c := range hd {
						att[h*hd+c] += sc[j] / sum * v[j][h*hd+c]
					}
				}
			}
			o := lin(p("attn_output.weight"), p("attn_output.bias"), att, d)
			for j := range o {
				o[j] += x[i][j]
			}
			a := ln(o, p("attn_output_norm.weight"), p("attn_output_norm.bias"))
			u := lin(p("ffn_up.weight"), p("ffn_up.bias"), a, ff)
			for j, z := range u {
				u[j] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
			}
			dn := lin(p("ffn_down.weight"), p("ffn_down.bias"), u, d)
			for j := range dn {
				dn[j] += a[j]
			}
			next[i] = ln(dn, p("layer_output_norm.weight"), p("layer_output_norm.bias"))
		}
		x = next
	}
	return x
}
