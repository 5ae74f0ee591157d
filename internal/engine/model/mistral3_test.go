package model

import (
	"path/filepath"
	"runtime"
	"testing"
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
	path, sum := archModel(t, "mistral3")
	if sum != ref.Model.SHA256 {
		if runtime.GOARCH != "amd64" {
			t.Skipf("synth wrote a model with sha256 %s on %s; the reference was made from the amd64 bytes %s", sum, runtime.GOARCH, ref.Model.SHA256)
		}
		t.Fatalf("synth wrote a model with sha256 %s; the reference was made from %s (%s): "+
			"rerun bench/synthref.sh mistral3 if the generator changed on purpose", sum, ref.Model.SHA256, ref.Model.Command)
	}
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
