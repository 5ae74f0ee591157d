# lib.sh holds what the whole-system benchmarks (pipeline.sh, replicas.sh)
# share: their checks, the binary and the default model, and a bridge of
# network namespaces. Source it; it sets nothing until called.

# need_netns NAME: root, the tools, and two cores, or exit saying which.
need_netns() {
	[ "$(id -u)" = 0 ] || { echo "$1: needs root (network namespaces)" >&2; exit 1; }
	for c in ip taskset node; do
		command -v "$c" >/dev/null || { echo "$1: $c is not installed" >&2; exit 1; }
	done
	[ "$(nproc)" -ge 2 ] || { echo "$1: needs 2 cores (one per node)" >&2; exit 1; }
}

# bench_binary ROOT WORK BIN: BIN, or skulk built from ROOT into WORK.
bench_binary() {
	if [ -n "$3" ]; then echo "$3"; return; fi
	(cd "$1" && go build -o "$2/skulk" ./cmd/skulk)
	echo "$2/skulk"
}

# bench_model SKULK MODEL: MODEL as an absolute path, or the synthesized
# 1b-shape Q8_0 ($TMPDIR/skulk-bench-1b-q8_0.gguf, ~1.1 GB, written once).
bench_model() {
	local model=$2
	if [ -z "$model" ]; then
		model="${TMPDIR:-/tmp}/skulk-bench-1b-q8_0.gguf"
		[ -f "$model" ] || "$1" dev synth --shape 1b --type Q8_0 --out "$model" >&2
	fi
	echo "$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
}

# netns_bridge SW UPLINK NET NS...: namespace SW holds a bridge (so the
# root namespace's firewall, a FORWARD policy of DROP as Docker sets, does
# not see it); the root namespace reaches it through the veth UPLINK as
# NET.254; each NS gets eth0 as NET.1, NET.2, ….
netns_bridge() {
	local sw=$1 up=$2 net=$3 i=0 n
	shift 3
	ip netns add "$sw"
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	ip link add "$up" type veth peer name up0 netns "$sw"
	ip -n "$sw" link set up0 master br0 up
	ip addr add "$net.254/24" dev "$up"
	ip link set "$up" up
	for n in "$@"; do
		ip netns add "$n"
		ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$n"
		ip -n "$sw" link set "p$i" master br0 up
		ip -n "$n" addr add "$net.$((i + 1))/24" dev eth0
		ip -n "$n" link set eth0 up
		ip -n "$n" link set lo up
		i=$((i + 1))
	done
}

# The functions below use the caller's variables: work (the scratch
# directory), skulk (the binary), ns (the node namespaces), sw (the
# bridge's), pids (the nodes started) and failed (set while the load runs).

# bench_node NS CORE KEY [args...]: `skulk run` in namespace NS pinned to
# CORE, with cluster key KEY, its home and log under $work.
bench_node() {
	local n=$1 core=$2 key=$3
	shift 3
	mkdir -p "$work/$n"
	SKULK_CLUSTER_KEY=$key ip netns exec "$n" taskset -c "$core" "$skulk" run --home "$work/$n" \
		--threads 1 --no-mdns --log-level "${LOG_LEVEL:-warn}" "$@" >"$work/$n.log" 2>&1 &
	pids+=($!)
	disown
}

# bench_cleanup UPLINK: stops the nodes, shows their logs' tails when the
# load failed (and copies the logs to $KEEP_LOGS when set), and removes the
# namespaces, the uplink and $work.
bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 1
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	if [ -n "${failed:-}" ]; then
		for n in "${ns[@]}"; do echo "--- $n log" >&2; tail -20 "$work/$n.log" >&2 || true; done
	fi
	if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS" && cp "$work"/*.log "$KEEP_LOGS"/ || true; fi
	for n in "${ns[@]}" "$sw"; do ip netns del "$n" 2>/dev/null || true; done
	ip link del "$1" 2>/dev/null || true
	rm -rf "$work"
}
