#!/bin/sh
# gen-kimi-k2.sh writes kimi-k2-VOCAB.json: llama.cpp's tokenization (the
# pinned libllama, bench/tokref) of kimi-k2.inp and llama.cpp's shared
# fixture texts with vocabularies relabelled tokenizer.ggml.pre = "kimi-k2"
# (Kimi K2's pre-tokenizer; no fixture ships one): gpt-2 and qwen2 plus the
# merges of gpt4o-merges.txt, and "pairs", the gpt-2 tokens whose only merges
# are the adjacent byte pairs of the texts. TestKimiK2Reference writes these
# files (-kimi-k2-vocab-dir) and checks its own tokenization against the JSON.
#
# usage: internal/engine/tokenizer/testdata/gen-kimi-k2.sh (from anywhere)
# TOKREF=/path/to/tokref uses an already built tokref instead of running
# bench/build.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
if [ -z "${TOKREF:-}" ]; then
	"$root/bench/build.sh"
	TOKREF="$root/bench/build/tokref"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/.." && go test . -run '^TestKimiK2Reference$' -count=1 -kimi-k2-vocab-dir "$tmp")
for v in gpt-2 qwen2 pairs; do
	fixture=$v
	[ "$v" = pairs ] && fixture=gpt-2
	"$TOKREF" -m "$tmp/$v.gguf" "$here/kimi-k2.inp" "$root/testdata/vocab/ggml-vocab-$fixture.gguf.inp" \
		>"$here/kimi-k2-$v.json"
done
