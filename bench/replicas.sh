#!/usr/bin/env bash
# replicas.sh measures what a second replica of a model on a second machine
# adds to the throughput of one node's API (issue 31's placement for
# throughput): N concurrent streams over 1 replica, then over 2 replicas on
# 2 nodes, alternating, in one run.
#
#   sudo bench/replicas.sh [MODEL] [--rounds N] [--streams N] [--skulk BIN] [--json]
#
# Two network namespaces on one bridge, each running `skulk run` with one
# engine thread, pinned with taskset to cores 0 and 1. The load comes from
# bench/replicas.mjs in the root namespace and always goes to node A's API.
# MODEL defaults to the synthesized 1b-shape Q8_0 that bench/pipeline.sh
# writes ($TMPDIR/skulk-bench-1b-q8_0.gguf). Needs root, iproute2, taskset,
# node and 2 cores. Leaves nothing behind.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

model="" rounds=3 streams=8 skulk="" json=""
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--streams) streams=$2; shift 2 ;;
	--skulk) skulk=$2; shift 2 ;;
	--json) json=--json; shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) model=$1; shift ;;
	esac
done
. "$here/lib.sh"
need_netns replicas.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/skulk-replicas-bench.XXXXXX")
skulk=$(bench_binary "$root" "$work" "$skulk")
model=$(bench_model "$skulk" "$model")

ns=(skrb1 skrb2) sw=skrbsw
pids=()
trap "bench_cleanup skrbc" EXIT

netns_bridge "$sw" skrbc 10.89.0 "${ns[@]}"

export SKULK_API_KEY=bench-admin-key SKULK_IMPORT_DIRS="$(dirname "$model")" SKULK_OFFLINE=1
clusterkey=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
bench_node skrb1 0 "$clusterkey"
bench_node skrb2 1 "$clusterkey" --bootstrap-peers 10.89.0.1:52416

failed=1
node "$here/replicas.mjs" --model "$model" --rounds "$rounds" --streams "$streams" --key "$SKULK_API_KEY" \
	--nodes http://10.89.0.1:52415,http://10.89.0.2:52415 $json
failed=
