package main

import (
	"context"

	"github.com/skulk/skulk/internal/serving/runner"
)

// runRunner is the runner child a node spawns; it speaks the runner
// protocol on stdin/stdout and logs on stderr.
func runRunner(ctx context.Context, args []string, s stdio) error {
	return runner.Main(ctx, s.in, s.out, s.err, args)
}
