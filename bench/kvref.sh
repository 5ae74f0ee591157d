#!/bin/sh
# Regenerates testdata/synthetic/kvref-*.json: llama.cpp's logits on two
# synthetic models and on `skulk dev synth --arch deepseek2`'s with
# quantized K/V caches (bench/kvref.c, flash attention on), the
# references of the Go engine's q8_0 and q4_0 caches.
# The prompts are synthref/1's public p1 and p33. Needs ../shared/models.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
sh "$here/build.sh"
p33=1,76,512,661,982,546,164,910,643,958,782,644,605,428,797,416,777,539,593,264,860,342,236,128,802,184,3,613,855,132,587,844,490
for model in synth-llama-f32 synth-qwen3-q8_0; do
	for t in q8_0 q4_0; do
		"$here/build/kvref" -m "$root/../shared/models/synthetic/$model.gguf" -ctk $t -ctv $t -p 1 -p $p33 \
			>"$root/testdata/synthetic/kvref-$model-$t.json"
	done
done
# Latent attention (deepseek2): the model `skulk dev synth --arch deepseek2`
# writes, rebuilt byte for byte (testdata/synthetic/synth-deepseek2.json
# records its sha256, which the test checks).
(cd "$root" && go build -o "$here/build/skulk" ./cmd/skulk)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/build/skulk" dev synth --arch deepseek2 --out "$tmp/synth-deepseek2.gguf"
for t in q8_0 q4_0; do
	"$here/build/kvref" -m "$tmp/synth-deepseek2.gguf" -ctk $t -ctv $t -p 1 -p $p33 \
		>"$root/testdata/synthetic/kvref-synth-deepseek2-$t.json"
done
