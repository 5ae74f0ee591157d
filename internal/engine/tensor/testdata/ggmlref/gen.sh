#!/bin/sh
# Regenerates the llama.cpp reference files in this directory with the
# prebuilt ggml that bench/package-lock.json pins (node-llama-cpp 3.21.1,
# llama.cpp 0.4.0-dev): bench/build.sh fetches it and its headers. The
# output is deterministic.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/../../../../../bench" && pwd)
sh "$bench/build.sh"
lib="$bench/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
inc="$bench/build/include"
exe="$bench/build/ggmlref"
gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
	-I"$inc/include" -I"$inc/ggml/include" -o "$exe" "$here/ggmlref.c" \
	-L"$lib" -l:libggml-base.so -Wl,-rpath,"$lib" -ldl -lm
# GGML type ids: Q2_K 10, Q3_K 11, IQ4_NL 20, IQ4_XS 23, MXFP4 39.
for t in q2_k:10 q3_k:11 iq4_nl:20 iq4_xs:23 mxfp4:39; do
	"$exe" "${t#*:}" 512 10 "$lib/libggml-cpu-x64.so" "$lib/libggml-cpu-haswell.so" "$here/${t%%:*}.bin"
done
