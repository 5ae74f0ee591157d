package diagnostics

import (
	"context"
	"time"

	"github.com/skulk/skulk/internal/control/plane"
)

// positionEvery is how often a node republishes its control-plane position.
const positionEvery = time.Second

// PublishPosition publishes this node's control-plane position as
// telemetry until ctx ends: diagnostics read it, and fresh nodes learn from
// it whether a cluster exists to join.
func PublishPosition(ctx context.Context, position func() plane.Position, publish func(key string, value []byte) error) {
	t := time.NewTicker(positionEvery / 4)
	defer t.Stop()
	var last []byte
	var at time.Time
	for {
		b := position().Encode()
		if string(b) != string(last) || time.Since(at) >= positionEvery {
			if err := publish(plane.PositionKey, b); err == nil {
				last, at = b, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
