#!/bin/sh
# synthref.sh writes llama.cpp's reference outputs (format synthref/1) for
# the synthetic model `skulk dev synth --arch ARCH` writes, into
# testdata/synthetic/synth-ARCH.json. The model itself is not committed:
# the same command rebuilds it byte for byte, and the reference records its
# sha256, which the tests check before comparing.
#
# A LongRoPE architecture (phi3) is also run in a context of 512 positions
# (the long_context section): its synthetic model's original context is
# 256, so the main runs take the short rope factors and that one the long.
# llama4 also gets the long_prompt section (synthref.c's -long-prompt).
#
# usage: bench/synthref.sh ARCH
set -eu
[ $# -eq 1 ] || { echo "usage: $0 ARCH" >&2; exit 2; }
arch=$1
here=$(cd "$(dirname "$0")" && pwd)
"$here/build.sh"
(cd "$here/.." && go build -o "$here/build/skulk" ./cmd/skulk)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="$tmp/synth-$arch.gguf"
"$here/build/skulk" dev synth --arch "$arch" --out "$model"
sha=$(sha256sum "$model" | cut -d' ' -f1)
extra=
[ "$arch" = phi3 ] && extra="-long-ctx 512"
# llama4's chunks and attention temperature start at position 8192 in
# llama.cpp whatever the file says: a prompt of 8192+24 tokens crosses both.
[ "$arch" = llama4 ] && extra="-long-prompt 8216"
# shellcheck disable=SC2086 # $extra is empty or two words
"$here/build/synthref" $extra -m "$model" -sha256 "$sha" -cmd "skulk dev synth --arch $arch --out synth-$arch.gguf" \
	-desc "skulk dev synth --arch $arch: random weights, the types real $arch files ship" \
	>"$here/../testdata/synthetic/synth-$arch.json"
