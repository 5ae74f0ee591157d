package node

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/runner"
	"github.com/skulk/skulk/internal/supervise"
	"github.com/skulk/skulk/internal/worker"
)

// spawner starts runner subprocesses: this binary re-executed as
// `skulk runner`, or command when given (tests use their own binary).
func spawner(command []string, log *slog.Logger) func(ctx context.Context, name string) (worker.Runner, error) {
	return func(ctx context.Context, name string) (worker.Runner, error) {
		l := log.With("runner", name)
		// The child logs what the node's level lets through; its records
		// keep their level on the way back (supervise re-emits them).
		level := []string{"-log-level", enabledLevel(ctx, log).String()}
		spec := runner.SelfSpec(l, level...)
		if len(command) > 0 {
			args := append(append(append([]string(nil), command[1:]...), "runner"), level...)
			spec = supervise.Spec{Path: command[0], Args: args, Logger: l}
		}
		c, err := runner.Start(ctx, spec, runner.Options{Logger: l})
		if err != nil {
			return nil, err
		}
		return clientRunner{c}, nil
	}
}

// enabledLevel is the lowest of the standard levels log lets through.
func enabledLevel(ctx context.Context, log *slog.Logger) slog.Level {
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if log.Enabled(ctx, l) {
			return l
		}
	}
	return slog.LevelError
}

// clientRunner adapts runner.Client to the worker's Runner.
type clientRunner struct{ c *runner.Client }

func (r clientRunner) Load(ctx context.Context, spec runner.LoadSpec) (runner.Status, error) {
	return r.c.Load(ctx, spec)
}

func (r clientRunner) Generate(ctx context.Context, task string, req infer.Request) (<-chan infer.Chunk, error) {
	return r.c.Generate(ctx, task, req)
}

func (r clientRunner) Embed(ctx context.Context, task string, req infer.EmbedRequest) (infer.EmbedResult, error) {
	return r.c.Embed(ctx, task, req)
}

func (r clientRunner) Exited() <-chan struct{} { return r.c.Done() }

func (r clientRunner) Err() error {
	if e := r.c.Exit(); !e.Success() {
		return fmt.Errorf("runner process (pid %d) ended: %s", e.Pid, e)
	}
	return nil
}

func (r clientRunner) Close(ctx context.Context) error { return r.c.Close(ctx) }
