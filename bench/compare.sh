#!/bin/sh
# compare.sh runs the native engine (skulk bench) and llama.cpp
# (build/llamabench) on the same model and thread count, alternating
# engines round by round so that drift in the machine's speed hits both,
# and prints the medians and the skulk/llama.cpp ratios, with the decode
# ceiling that the machine's memory bandwidth allows (measured every round,
# the best taken).
#
# usage: bench/compare.sh MODEL THREADS [--json]
# environment: ROUNDS (default 5) rounds of each engine, REPEAT (default 1)
# timed runs per round (each round also loads the model and warms up once);
# PROMPT_TOKENS (512), GEN_TOKENS (128); SKULK, a skulk binary to use
# instead of building ./cmd/skulk.
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ] || { [ $# -eq 3 ] && [ "$3" != --json ]; }; then
	echo "usage: $0 MODEL THREADS [--json]" >&2
	exit 2
fi
model=$1 threads=$2 json=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-5} repeat=${REPEAT:-1} pp=${PROMPT_TOKENS:-512} tg=${GEN_TOKENS:-128}

"$here/build.sh"
skulk=${SKULK:-}
if [ -z "$skulk" ]; then
	(cd "$here/.." && go build -o "$here/build/skulk" ./cmd/skulk)
	skulk="$here/build/skulk"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/ours.jsonl"
: >"$tmp/llama.jsonl"
: >"$tmp/membw.jsonl"
i=1
while [ "$i" -le "$rounds" ]; do
	# The bandwidth is measured every round too: the ceiling takes the best.
	"$here/build/membw" -t "$threads" -json >>"$tmp/membw.jsonl"
	echo "round $i/$rounds: skulk" >&2
	"$skulk" bench --model "$model" --threads "$threads" --prompt-tokens "$pp" --gen-tokens "$tg" \
		--repeat "$repeat" --json >>"$tmp/ours.jsonl"
	echo "round $i/$rounds: llama.cpp" >&2
	"$here/build/llamabench" -m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$repeat" >>"$tmp/llama.jsonl"
	i=$((i + 1))
done
node "$here/report.mjs" "$tmp/ours.jsonl" "$tmp/llama.jsonl" "$tmp/membw.jsonl" $json
