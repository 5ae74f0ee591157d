package placement

// The numbers the seed names, and the two it leaves to its missing
// Architecture Reference (the overhead factor and the floor), which we choose.
const (
	// OverheadFactor scales a node's weight share to cover what an engine
	// allocates beside the weights: activations, compute and dequantization
	// buffers. KV is charged separately, so this only covers scratch space.
	OverheadFactor = 1.10

	// FloorBytes is charged once per node for the runner process itself
	// (code, tokenizer, thread stacks, the shared-memory rings).
	FloorBytes int64 = 512 << 20

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
	// overhead factor and a floor.
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
