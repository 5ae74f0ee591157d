#!/usr/bin/env bash
# pipeline.sh measures one model split across two nodes against the same
# model on one node, side by side in one run (issue 15's benchmarks).
#
#   sudo bench/pipeline.sh [MODEL] [--rounds N] [--skulk BIN] [--modes decode,ttft] [--json]
#
# Three network namespaces on one bridge, each running `skulk run` with one
# engine thread and pinned with taskset: the two stage nodes on cores 0 and
# 1 (one core each, the cluster under test), the single node on core 0 (idle
# while the pipeline is measured, and the other way round). The load comes
# from bench/pipeline.mjs in the root namespace, alternating between the
# two, round by round: single-stream decode, aggregate decode at 4 and 8
# concurrent streams, time to first token of a 1024-token prompt, and the
# per-hop latency the node reports for the instance's edges
# (/v1/diagnostics/cluster) next to a raw TCP ping-pong of one hidden row
# on the same veth pair.
#
# MODEL defaults to a synthesized 1b-shape Q8_0 (written once to
# $TMPDIR/skulk-bench-1b-q8_0.gguf, ~1.1 GB). Needs root, iproute2, taskset,
# node. Leaves nothing behind: the namespaces, the bridge and the homes go
# at exit (KEEP_LOGS=DIR first copies the three nodes' logs there; with
# LOG_LEVEL=debug they hold each stage's busy time every 5 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

model="" rounds=3 skulk="" json="" modes=decode,ttft
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--skulk) skulk=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--json) json=--json; shift ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) model=$1; shift ;;
	esac
done
. "$here/lib.sh"
need_netns pipeline.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/skulk-pipeline-bench.XXXXXX")
skulk=$(bench_binary "$root" "$work" "$skulk")
model=$(bench_model "$skulk" "$model")

ns=(skpb1 skpb2 skpb3) # stage node A, stage node B, the single node
sw=skpbsw
pids=()
trap "bench_cleanup skpbc" EXIT

netns_bridge "$sw" skpbc 10.88.0 "${ns[@]}"

export SKULK_API_KEY=bench-admin-key SKULK_IMPORT_DIRS="$(dirname "$model")" SKULK_OFFLINE=1
clusterkey=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
bench_node skpb1 0 "$clusterkey"
bench_node skpb2 1 "$clusterkey" --bootstrap-peers 10.88.0.1:52416
bench_node skpb3 0 "single-$clusterkey"

failed=1
node "$here/pipeline.mjs" --model "$model" --rounds "$rounds" --key "$SKULK_API_KEY" \
	--pipeline http://10.88.0.1:52415,http://10.88.0.2:52415 --single http://10.88.0.3:52415 \
	--ping-ns skpb1,skpb2 --ping-addr 10.88.0.2 --modes "$modes" $json
failed=
