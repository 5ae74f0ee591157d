#!/bin/sh
# Makes the synthetic llama models in the 2–4-bit types big MoE models ship
# in, and their llama.cpp references, into testdata/synthetic: llama.cpp's
# quantizer (pure) on shared/models/synthetic/synth-llama-f32.gguf, then
# synthref ref on the result and on llama.cpp's F32 dequantized copy of it.
# Uses the prebuilt llama.cpp bench/build.sh fetches. Deterministic for a
# given llama.cpp CPU variant (the backend picks the best for this CPU;
# llama_cpp.system_info in each JSON says which features it had).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
base=${SYNTH_F32:-$root/../shared/models/synthetic/synth-llama-f32.gguf}
sh "$root/bench/build.sh"
lib="$root/bench/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
inc="$root/bench/build/include"
exe="$root/bench/build/synthref"
gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
	-I"$inc/include" -I"$inc/ggml/include" -DLLAMA_LIB_DIR="\"$lib\"" \
	-o "$exe" "$here/synthref.c" \
	-L"$lib" -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,"$lib"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name:weight type:llama ftype (LLAMA_FTYPE_MOSTLY_*; pure makes every
# matrix exactly that type).
for m in q2_k:q2_K:10 q3_k:q3_K:12 iq4_nl:iq4_nl:25 iq4_xs:iq4_xs:30 mxfp4:mxfp4:38; do
	name=synth-llama-${m%%:*}
	rest=${m#*:}
	wt=${rest%%:*}
	ft=${rest#*:}
	"$exe" quant "$base" "$root/testdata/synthetic/$name.gguf" "$ft"
	"$exe" quant "$root/testdata/synthetic/$name.gguf" "$tmp/$name-f32.gguf" 0
	"$exe" ref "$root/testdata/synthetic/$name.gguf" "$tmp/$name-f32.gguf" "$name" "$wt" "$ft" "$root/testdata/synthetic/$name.json"
done
