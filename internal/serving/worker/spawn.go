package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Spawner starts runner subprocesses (Config.Spawn): this binary re-executed as
// `skulk runner`, or command when given (tests use their own binary). The
// engine's configuration goes to the child as flags: it reads no
// environment.
func Spawner(command []string, eng config.Engine, log *slog.Logger) func(ctx context.Context, name string) (Runner, error) {
	return func(ctx context.Context, name string) (Runner, error) {
		l := log.With("runner", name)
		flags := runnerFlags(enabledLevel(ctx, log), eng)
		spec := client.SelfSpec(l, flags...)
		if len(command) > 0 {
			args := append(append(append([]string(nil), command[1:]...), "runner"), flags...)
			spec = supervise.Spec{Path: command[0], Args: args, Logger: l}
		}
		c, err := client.Start(ctx, spec, client.Options{Logger: l})
		if err != nil {
			return nil, err
		}
		return clientRunner{c}, nil
	}
}

// runnerFlags are a runner child's flags: it logs what the node's level
// lets through (its records keep their level on the way back: supervise
// re-emits them), and it takes the engine's configuration from the node.
func runnerFlags(level slog.Level, eng config.Engine) []string {
	flags := []string{"-log-level", level.String()}
	if eng.Kernels != "" {
		flags = append(flags, "-kernels", eng.Kernels)
	}
	if eng.NoPack {
		flags = append(flags, "-no-pack")
	}
	if eng.Slots > 0 {
		flags = append(flags, "-slots", strconv.Itoa(eng.Slots))
	}
	if eng.PrefixCacheMB != nil {
		flags = append(flags, "-prefix-cache-mb", strconv.Itoa(*eng.PrefixCacheMB))
	}
	return flags
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

// clientRunner adapts client.Client to Runner.
type clientRunner struct{ c *client.Client }

func (r clientRunner) Load(ctx context.Context, spec proto.LoadSpec) (proto.Status, error) {
	return r.c.Load(ctx, spec)
}

func (r clientRunner) Generate(ctx context.Context, task string, req request.Request) (<-chan request.Chunk, error) {
	return r.c.Generate(ctx, task, req)
}

func (r clientRunner) Embed(ctx context.Context, task string, req request.EmbedRequest) (request.EmbedResult, error) {
	return r.c.Embed(ctx, task, req)
}

func (r clientRunner) Exited() <-chan struct{} { return r.c.Done() }

func (r clientRunner) Err() error {
	if err := r.c.Stall(); err != nil {
		return fmt.Errorf("runner process (pid %d): %w", r.c.Pid(), err) // the status names the stall
	}
	if e := r.c.Exit(); !e.Success() {
		return fmt.Errorf("runner process (pid %d) ended: %s", e.Pid, e)
	}
	return nil
}

// Pid is the runner's process id (the worker reports its memory).
func (r clientRunner) Pid() int { return r.c.Pid() }

func (r clientRunner) Close(ctx context.Context) error { return r.c.Close(ctx) }
