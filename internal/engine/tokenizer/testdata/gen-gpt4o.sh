#!/bin/sh
# gen-gpt4o.sh writes gpt4o-VOCAB.json: llama.cpp's tokenization (the pinned
# libllama, bench/tokref) of gpt4o.inp and llama.cpp's shared fixture texts
# with the gpt-2 and qwen2 fixture vocabularies relabelled
# tokenizer.ggml.pre = "gpt-4o" plus the merges of gpt4o-merges.txt. No
# fixture ships a gpt-4o vocabulary; TestGPT4oReference writes these files
# (-gpt4o-vocab-dir) and checks its own tokenization against the JSON.
#
# usage: internal/engine/tokenizer/testdata/gen-gpt4o.sh (from anywhere)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
"$root/bench/build.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/.." && go test . -run '^TestGPT4oReference$' -count=1 -gpt4o-vocab-dir "$tmp")
for v in gpt-2 qwen2; do
	"$root/bench/build/tokref" -m "$tmp/$v.gguf" "$here/gpt4o.inp" "$root/testdata/vocab/ggml-vocab-$v.gguf.inp" \
		>"$here/gpt4o-$v.json"
done
