// Command skulk is the single binary of the Skulk inference fabric: it runs a
// node, the runner children the node spawns, and the client and developer
// commands that talk to a node or drive the engine directly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/skulk/skulk/internal/config"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and the process's standard streams; it returns an error to print.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdio stdio) error
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// exitError carries a specific exit status (for example 2 for usage or a
// template error) through to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// commands lists every subcommand; each lives in its own file.
func commands() map[string]command {
	return map[string]command{
		"run":      {"run a node: serve models over the HTTP API", runRun},
		"runner":   {"(internal) the runner subprocess a node spawns", runRunner},
		"chat":     {"chat with a model in the terminal (places it if needed)", runChat},
		"ps":       {"list placed instances", runPs},
		"cluster":  {"cluster membership: print the invite line that joins a machine", runCluster},
		"place":    {"place a model on the cluster", runPlace},
		"stop":     {"stop an instance", runStop},
		"models":   {"list the model catalog", runModels},
		"tokenize": {"tokenize text with a model's vocabulary", runTokenize},
		"bench":    {"measure prefill and decode speed of a GGUF model", runBench},
		"generate": {"generate text from a prompt with a local GGUF model", runGenerate},
		"dev":      {"developer tools: logits, synth, chat-render, embed", runDev},
		"doctor":   {"check a node's home; --ack-log-loss acknowledges history the event log lost", runDoctor},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, s stdio) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(s.err, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(s.err, "skulk: unknown command %q (run 'skulk help' for the list)\n", args[0])
		return 2
	}
	if err := c.run(ctx, args[1:], s); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil && ee.err.Error() != "" {
				fmt.Fprintf(s.err, "skulk %s: %v\n", args[0], ee.err)
			}
			return ee.code
		}
		fmt.Fprintf(s.err, "skulk %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: skulk <command> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
}

// engineConfig is the engine's configuration (SKULK_KERNELS), for the
// commands that run the engine in this process.
func engineConfig() (config.Engine, error) { return config.EngineFromEnv(os.Getenv) }

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("skulk "+name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	return fs
}

// parseFlags parses flags that may come before, between or after positional
// arguments (`skulk chat MODEL --host H`), and returns the positionals.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
