package placement

// The numbers the seed names, and the two it leaves to its missing
// Architecture Reference (the overhead factor and the runner overhead), which
// we choose.
const (
	// OverheadFactor scales a node's weight share to cover what an engine
	// allocates beside the weights: activations, compute and dequantization
	// buffers. KV is charged separately, so this only covers scratch space.
	OverheadFactor = 1.10

	// RunnerOverheadBytes is charged once per runner (one per rank placed
	// on a node) for the process itself: the skulk binary's mapped code, the
	// Go runtime and heap, the tokenizer, thread stacks and the
	// shared-memory rings. Measured: a runner serving the built-in demo model
	// (1.2 MB of weights) after a completion has a VmRSS of 22-23 MB, of
	// which about 19 MB is the binary's file-backed pages and 3.4 MB
	// anonymous (see bench/README.md, "Memory estimates"); 32 MiB leaves
	// about 40% headroom over that. It was 512 MiB, which charged a demo
	// runner 20 times what it used. The security bounds do not depend on it:
	// a node takes at most DefaultMaxInstances runners (or its
	// --max-instances) whatever their charge.
	RunnerOverheadBytes int64 = 32 << 20

	// KVCacheF16, KVCacheF32, KVCacheQ8_0 and KVCacheQ4_0 are the KV cache
	// element types (a card's runtime.kv_cache_type, a placement's
	// cache_type; llama.cpp's -ctk/-ctv). The runner's cache is fp16 unless
	// one asks for another (engine/model Cache), so KVBytesPerTokenLayer
	// charges 2 bytes an element by default; q8_0 stores 32 elements in 34
	// bytes and q4_0 in 18, so the same memory holds 1.9× and 3.6× the
	// context.
	KVCacheF16  = "f16"
	KVCacheF32  = "f32"
	KVCacheQ8_0 = "q8_0"
	KVCacheQ4_0 = "q4_0"

	// DefaultContext is the served window when a request names none; engines
	// that reserve their whole window at load would otherwise commit the
	// card's maximum, which can be far beyond what anyone uses.
	DefaultContext = 32768

	// AdmissionFloor is the smallest window a placement may serve; a node
	// that cannot hold KV for this many tokens is not admitted. A card whose
	// own maximum is smaller uses its maximum instead.
	AdmissionFloor = 8192

	// FitTolerance is the share of a node's usable memory the worker's
	// pre-spawn check forgives: live readings jitter against the gossiped
	// figure the master admitted on, and the estimate already carries an
	// overhead factor and the runner overhead.
	FitTolerance = 0.10

	// MaxRefusalHops bounds the refusal → re-placement chain so it can never
	// oscillate between two refusing nodes.
	MaxRefusalHops = 2

	// MaxLayers bounds the planner's work on malformed cards; no real model
	// comes near it.
	MaxLayers = 1 << 12

	// DefaultMaxInstances bounds the runners placed on a node that publishes
	// no limit of its own (--max-instances). Memory admission alone does not
	// bound a tiny model: each runner is a process, and a LAN client could
	// otherwise fill a node with them.
	DefaultMaxInstances = 16

	// DefaultMaxInstancesPerModel bounds the instances of one model in the
	// cluster when the master sets no limit (--max-instances-per-model).
	DefaultMaxInstancesPerModel = 16
)

// ShardingPipeline is the only sharding the planner produces: contiguous
// layer ranges, one per node.
const ShardingPipeline = "pipeline"

// Integer forms of the fractions above, so admission never rounds through
// floating point (which may fuse differently on another architecture and
// make the API's dry run disagree with the master).
const (
	overheadPercent  = int64((OverheadFactor - 1) * 100)
	tolerancePercent = int64(FitTolerance * 100)
)
