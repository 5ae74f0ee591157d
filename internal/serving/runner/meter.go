package runner

import (
	"sync/atomic"

	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// stepMeter counts a batcher's steps for the heartbeat; its fields are
// written by the batcher and read by the heartbeat goroutine.
type stepMeter struct {
	steps  atomic.Uint64
	inStep atomic.Bool
}

func (m *stepMeter) begin() {
	if m != nil {
		m.inStep.Store(true)
	}
}

func (m *stepMeter) end() {
	if m != nil {
		m.steps.Add(1)
		m.inStep.Store(false)
	}
}

func (m *stepMeter) read() proto.Progress {
	return proto.Progress{Steps: m.steps.Load(), InStep: m.inStep.Load()}
}
