package diagnostics

import (
	"context"
	"os"
	"runtime"
	"time"

	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/worker"
)

// NodeReport is the GET /v1/diagnostics/node document: this node's facts
// and its runners, each with its flight recorder.
type NodeReport struct {
	NodeID        ids.NodeID `json:"nodeId"`
	Name          string     `json:"name,omitempty"` // --name, else the host name
	Version       string     `json:"version"`
	Commit        string     `json:"commit"`
	GoVersion     string     `json:"goVersion"`
	Platform      string     `json:"platform"` // GOOS/GOARCH
	StartedAt     time.Time  `json:"startedAt"`
	UptimeSeconds int64      `json:"uptimeSeconds"`
	Role          string     `json:"role"` // master, follower, or electing
	// Kernels is the engine's kernel set this node's runners use (the
	// best for the CPU within SKULK_KERNELS).
	Kernels      string         `json:"kernels"`
	Threads      int            `json:"threads"` // engine threads per runner; 0: the physical cores
	CPU          telemetry.CPU  `json:"cpu"`
	Memory       NodeMemory     `json:"memory"`
	MaxInstances int            `json:"maxInstances"`
	Runners      []RunnerReport `json:"runners"`
}

// NodeMemory is the node's memory as placement and the operator see it.
type NodeMemory struct {
	TotalBytes     int64 `json:"totalBytes"`
	AvailableBytes int64 `json:"availableBytes"`
	BudgetBytes    int64 `json:"budgetBytes"` // --memory-budget; 0: the machine's
	// NodeResidentBytes is the node process's own resident memory (its
	// runners are counted apiece).
	NodeResidentBytes int64 `json:"nodeResidentBytes"`
}

// RunnerReport is one instance rank's runner on this node with its flight
// recorder: the latest worker.RecorderSize phases of its incarnations.
type RunnerReport struct {
	Instance      ids.InstanceID `json:"instance"`
	Model         ids.ModelID    `json:"model"`
	Rank          int            `json:"rank"`
	Runner        ids.RunnerID   `json:"runner"`
	Pid           int            `json:"pid,omitempty"`
	Restarts      int            `json:"restarts"`
	Ready         bool           `json:"ready"`
	ResidentBytes int64          `json:"residentBytes,omitempty"`
	Phases        []worker.Phase `json:"phases"`
}

// NodeFacts are what GET /v1/diagnostics/node reports of the node beside
// its runners.
type NodeFacts struct {
	Self            ids.NodeID
	Name            string
	Version, Commit string
	Started         time.Time
	// Threads, MaxInstances and MemoryBudget are the node's
	// configuration; KernelCap its SKULK_KERNELS.
	Threads      int
	MaxInstances int
	MemoryBudget int64
	KernelCap    string
	Plane        Plane
	Recorders    func() []worker.RunnerRecord
}

// Node answers GET /v1/diagnostics/node.
func Node(f NodeFacts) func(context.Context) (any, error) {
	return func(context.Context) (any, error) {
		now := time.Now()
		doc := NodeReport{NodeID: f.Self, Name: f.Name, Version: f.Version, Commit: f.Commit, GoVersion: runtime.Version(),
			Platform: runtime.GOOS + "/" + runtime.GOARCH, StartedAt: f.Started, UptimeSeconds: int64(now.Sub(f.Started).Seconds()),
			Role: "electing", Kernels: "unknown", Threads: f.Threads, CPU: telemetry.ReadCPU(), MaxInstances: f.MaxInstances,
			Memory: NodeMemory{BudgetBytes: f.MemoryBudget}, Runners: []RunnerReport{}}
		switch {
		case f.Plane.IsMaster():
			doc.Role = "master"
		case f.Plane.Leader() != "":
			doc.Role = "follower"
		}
		if k := Kernels(f.KernelCap); k != "" {
			doc.Kernels = k
		}
		if m, err := telemetry.ReadMemory(); err == nil {
			doc.Memory.TotalBytes, doc.Memory.AvailableBytes = m.TotalBytes, m.AvailableBytes
		}
		doc.Memory.NodeResidentBytes, _ = telemetry.ResidentBytes(os.Getpid())
		for _, r := range f.Recorders() {
			rss, _ := telemetry.ResidentBytes(r.Pid)
			doc.Runners = append(doc.Runners, RunnerReport{Instance: r.Instance, Model: r.Model, Rank: r.Rank, Runner: r.Runner, Pid: r.Pid,
				Restarts: r.Restarts, Ready: r.Ready, ResidentBytes: rss, Phases: r.Phases})
		}
		return doc, nil
	}
}

// Kernels names the kernel set this node's runners use under the cap
// (SKULK_KERNELS; "" when it names none this machine has).
func Kernels(limit string) string {
	k, err := tensor.Capped(limit)
	if err != nil {
		return ""
	}
	return k.Name()
}
