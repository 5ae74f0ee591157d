package event

// RunnerStatus is a runner's lifecycle phase as its worker reports it.
type RunnerStatus string

const (
	RunnerPending     RunnerStatus = "pending"     // placed, nothing started
	RunnerDownloading RunnerStatus = "downloading" // fetching or verifying weights
	RunnerLoading     RunnerStatus = "loading"     // process spawned, loading its shard
	RunnerWarming     RunnerStatus = "warming"     // shard loaded, warming up, joining edges
	RunnerReady       RunnerStatus = "ready"       // serving, idle
	RunnerRunning     RunnerStatus = "running"     // at least one generation in flight (seed WORK-14)
	RunnerFailed      RunnerStatus = "failed"      // gave up or crashed; terminal for this RunnerID
	RunnerStopped     RunnerStatus = "stopped"     // torn down cleanly; terminal for this RunnerID
)

// Terminal reports whether no further status may follow for the same runner.
func (s RunnerStatus) Terminal() bool { return s == RunnerFailed || s == RunnerStopped }

// Serving reports whether a runner in this status can take work.
func (s RunnerStatus) Serving() bool { return s == RunnerReady || s == RunnerRunning }

func (s RunnerStatus) validate() error {
	return enum(s, RunnerPending, RunnerDownloading, RunnerLoading, RunnerWarming,
		RunnerReady, RunnerRunning, RunnerFailed, RunnerStopped)
}

// DeleteReason says why an instance was removed.
type DeleteReason string

const (
	DeleteOperator DeleteReason = "operator"  // DeleteInstance; creates no failure history (seed CTRL-16)
	DeleteNodeLost DeleteReason = "node_lost" // a rank's node left the cluster
	DeleteFailed   DeleteReason = "failed"    // follows InstanceFailed
	DeleteRefused  DeleteReason = "refused"   // a worker refused the placement; re-placed or given up
)

func (r DeleteReason) validate() error {
	return enum(r, DeleteOperator, DeleteNodeLost, DeleteFailed, DeleteRefused)
}

// FailureCategory is the stable, operator-safe class of an instance failure
// (seed CTRL-17).
type FailureCategory string

const (
	FailureCrashLoop     FailureCategory = "crash_loop"     // the crash breaker gave up
	FailureWedged        FailureCategory = "wedged"         // stopped making progress
	FailureUnresponsive  FailureCategory = "unresponsive"   // silent past the first-status deadline
	FailureModelRejected FailureCategory = "model_rejected" // immutable model-identity rejection
	FailureOutOfMemory   FailureCategory = "out_of_memory"  // refused or killed for memory
	FailureNodeLost      FailureCategory = "node_lost"      // a rank's node left
	FailureDownload      FailureCategory = "download"       // weights could not be fetched
	FailureGroupConnect  FailureCategory = "group_connect"  // a split instance's ranks did not all load and link in time
)

func (c FailureCategory) validate() error {
	return enum(c, FailureCrashLoop, FailureWedged, FailureUnresponsive,
		FailureModelRejected, FailureOutOfMemory, FailureNodeLost, FailureDownload, FailureGroupConnect)
}

// LeaveReason says why a node left the cluster.
type LeaveReason string

const (
	LeaveGraceful LeaveReason = "left"      // announced its departure
	LeaveTimedOut LeaveReason = "timed_out" // liveness signals expired (seed NodeTimedOut)
)

func (r LeaveReason) validate() error { return enum(r, LeaveGraceful, LeaveTimedOut) }
