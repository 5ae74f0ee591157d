// Command skulk is the single binary of the Skulk inference fabric: it runs a
// node, the runner children the node spawns, and the client and developer
// commands that talk to a node or drive the engine directly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/version"
)

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// exitError carries a specific exit status (2 for usage or a template
// error) through to main. An empty message prints nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage mistake: exit status 2.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status: 0, 1 for a
// failure, 2 for a usage mistake.
func run(ctx context.Context, args []string, s stdio) int {
	root := newRootCmd(s)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's own "unknown command "x" for "skulk"" (with suggestions).
		code = 2
		err = fmt.Errorf("%s\nrun 'skulk --help' for the list of commands", strings.TrimSpace(err.Error()))
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(s.err, "%s: %s\n", cmd.CommandPath(), msg)
	}
	return code
}

// Command groups, in the order `skulk --help` lists them.
const (
	groupModels = "models"
	groupNode   = "node"
	groupEngine = "engine"
)

func newRootCmd(s stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "skulk",
		Short: "Skulk: one LLM inference fabric from the machines you have",
		Long: `Skulk turns the machines you have into one inference fabric for large language
models. Every machine runs the same binary: 'skulk serve' (or 'skulk run') starts a
node; the other commands talk to a node's API (SKULK_HOST or --host, default
localhost:52415) or run the engine on a local GGUF file.`,
		Example: `  skulk serve                       # start a node on port 52415
  skulk run stories260k             # chat with the built-in demo model
  skulk run stories260k "Once upon a time"
  skulk list                        # the model catalog
  skulk ps                          # what is placed, where, and its status`,
		Version:           version.Get().String(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetVersionTemplate("skulk version {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddGroup(
		&cobra.Group{ID: groupModels, Title: "Models and chat:"},
		&cobra.Group{ID: groupNode, Title: "Nodes and clusters:"},
		&cobra.Group{ID: groupEngine, Title: "The engine on a local GGUF file:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupModels,
		newRunCmd(s), newChatCmd(s), newModelsCmd(s),
		newPullCmd(s), newListCmd(s), newShowCmd(s), newRmCmd(s),
		newPsCmd(s), newPlaceCmd(s), newStopCmd(s),
	)
	add(groupNode, newServeCmd(s), newNodesCmd(s), newClusterCmd(s), newKeysCmd(s), newTraceCmd(s), newDoctorCmd(s), newVersionCmd(s))
	add(groupEngine, newGenerateCmd(s), newTokenizeCmd(s), newBenchCmd(s), newDevCmd(s))
	root.AddCommand(newRunnerCmd(s))
	root.SetHelpCommandGroupID(groupNode)
	root.SetCompletionCommandGroupID(groupNode)
	return root
}

// groupCmd is a command that only holds subcommands: without one it prints
// its help and fails with a usage error; an unknown one is named.
func groupCmd(c *cobra.Command) *cobra.Command {
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErrorf("unknown subcommand %q (see '%s --help')", args[0], cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		cmd.SetOut(cmd.ErrOrStderr())
		cmd.Help()
		return &exitError{code: 2, err: errors.New("")}
	}
	return c
}

// exactArgs checks a command got exactly the positional arguments its
// usage line names.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("usage: %s (see '%s --help')", cmd.UseLine(), cmd.CommandPath())
		}
		return nil
	}
}

// noArgs refuses positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q (see '%s --help')", args[0], cmd.CommandPath())
	}
	return nil
}

// engineConfig is the engine's configuration (SKULK_KERNELS), for the
// commands that run the engine in this process.
func engineConfig() (config.Engine, error) { return config.EngineFromEnv(os.Getenv) }

func newVersionCmd(s stdio) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print skulk's version and commit",
		Example: "  skulk version\n  skulk --version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(s.out, "skulk version %s\n", version.Get())
			return err
		},
	}
}

func newRunnerCmd(s stdio) *cobra.Command {
	return &cobra.Command{
		Use:                "runner",
		Short:              "(internal) the runner subprocess a node spawns",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunner(cmd.Context(), args, s)
		},
	}
}
