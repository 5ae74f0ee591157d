package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skulk/skulk/internal/node"
	"github.com/skulk/skulk/internal/platform/config"
)

// nodeFlags adds the flags of a node (skulk serve, skulk run) to fs, bound
// to cfg, which holds the environment's values.
func nodeFlags(fs *pflag.FlagSet, cfg *config.Node) {
	fs.StringVar(&cfg.Name, "name", cfg.Name, "the node's name, shown beside its id in 'skulk nodes', 'skulk ps' and the logs (SKULK_NAME; default the machine's host name)")
	fs.StringVar(&cfg.Home, "home", cfg.Home, "state directory (SKULK_HOME)")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "HTTP API port `N`, with gossip on N+1 and QUIC on N+2 (SKULK_PORT; default 52415); --api-addr, --gossip-addr and --quic-addr win over it")
	fs.StringVar(&cfg.APIAddr, "api-addr", cfg.APIAddr, "HTTP API address HOST:PORT (SKULK_API_ADDR; wins over --port)")
	fs.BoolVar(&cfg.Offline, "offline", cfg.Offline, "never use the network for models (SKULK_OFFLINE=1, true, yes or on)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "log format: text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "engine threads per runner (0 = physical cores)")
	fs.IntVar(&cfg.MaxInstances, "max-instances", cfg.MaxInstances, "most runners the cluster may place on this node (SKULK_MAX_INSTANCES; 0 = 16)")
	fs.IntVar(&cfg.MaxInstancesPerModel, "max-instances-per-model", cfg.MaxInstancesPerModel, "most instances of one model in the cluster while this node is master (SKULK_MAX_INSTANCES_PER_MODEL; 0 = 16)")
	fs.IntVar(&cfg.MaxConnsPerClient, "max-conns-per-client", cfg.MaxConnsPerClient,
		"API connections one client may hold open: an API key, or an address without one; more are answered 429 unless an idle one makes room (0 = no limit; SKULK_MAX_CONNS_PER_CLIENT)")
	fs.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns,
		"API connections all clients may hold open; at the bound a client under its fair share takes the place of an idle connection of the client holding the most (0 = no limit; SKULK_MAX_CONNS)")
	fs.StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "membership gossip address HOST:PORT (wins over --port)")
	fs.StringVar(&cfg.QUICAddr, "quic-addr", cfg.QUICAddr, "QUIC transport address HOST:PORT (wins over --port)")
	fs.BoolVar(&cfg.NoMDNS, "no-mdns", cfg.NoMDNS, "do not discover peers by mDNS")
	fs.Func("bootstrap-peers", "comma-separated gossip addresses `HOST:PORT` of nodes to join (SKULK_BOOTSTRAP_PEERS)", func(v string) error {
		cfg.BootstrapPeers = append(cfg.BootstrapPeers, config.SplitList(v)...)
		return nil
	})
	fs.StringVar(&cfg.Join, "join", cfg.Join, "join a cluster with the invite line a member printed ('skulk cluster invite')")
	fs.BoolVar(&cfg.OpenCluster, "open-cluster", cfg.OpenCluster, "let any host that reaches the gossip port join, without the cluster key (warned at every start)")
	fs.Func("memory-budget", "cap the memory placement may count on this node to `BYTES` (or 8GiB, 512MiB; SKULK_MEMORY_BUDGET; default the machine's)", func(v string) error {
		b, err := config.ParseBytes(v)
		cfg.MemoryBudget = b
		return err
	})
	fs.Func("group-connect-timeout", "how long `D` (e.g. 90s, 5m) a model split across nodes may take to load every rank and connect every edge before the master places it again (SKULK_GROUP_CONNECT_TIMEOUT; default 2m)", func(v string) error {
		d, err := time.ParseDuration(v)
		cfg.GroupConnectTimeout = d
		return err
	})
	fs.Func("voter-timeout", "how long `D` a voter of the control plane may be gone before a healthy member replaces it (SKULK_VOTER_TIMEOUT; default 5m)", func(v string) error {
		d, err := time.ParseDuration(v)
		cfg.VoterTimeout = d
		return err
	})
	fs.BoolVar(&cfg.APIOpen, "api-open", cfg.APIOpen, "serve API clients on every address without a key when none is set (SKULK_API_OPEN=1; warned at start)")
	fs.BoolVar(&cfg.MetricsPublic, "metrics-public", cfg.MetricsPublic, "serve GET /metrics to every address without a key (SKULK_METRICS_PUBLIC=1)")
	envImportDirs := true
	fs.Func("import-dir", "a directory `DIR` that 'skulk models import' may read under; repeat or comma-separate (SKULK_IMPORT_DIRS; default: the models directory's import/, and your home for requests from this machine)", func(v string) error {
		if envImportDirs { // the flags replace the environment's list
			cfg.ImportDirs, envImportDirs = nil, false
		}
		cfg.ImportDirs = append(cfg.ImportDirs, config.SplitList(v)...)
		return nil
	})
}

const serveExample = `  skulk serve                                   # a new cluster: prints the line that adds a machine
  skulk serve --join skulk1:eyJrIjoi…           # join the cluster of that line
  skulk serve --port 8080                       # API on 8080, gossip 8081, QUIC 8082
  skulk serve --api-addr 127.0.0.1:8080 --home /srv/skulk
  skulk serve --bootstrap-peers 10.0.0.5:52416 --no-mdns`

func newServeCmd(s stdio) *cobra.Command {
	cfg := config.FromEnv(os.Getenv)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Start a node: serve models over the HTTP API (same as 'skulk run' with no model)",
		Long: `Start a node. It serves the OpenAI, Anthropic and Ollama APIs on port 52415
(--port N moves it, and gossip and QUIC to N+1 and N+2), gossips with the other
members of its cluster, and runs the runners the cluster places on it. The first
start creates a cluster and prints the line that adds another machine; Ctrl-C
stops the node.`,
		Example: serveExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveNode(cmd, cfg, s)
		},
	}
	nodeFlags(c.Flags(), &cfg)
	return c
}

func newRunCmd(s stdio) *cobra.Command {
	cfg := config.FromEnv(os.Getenv)
	var opts chatOptions
	c := &cobra.Command{
		Use:   "run [MODEL [PROMPT...]]",
		Short: "Chat with a model, or with no model start a node",
		Long: `With a model, chat with it in the terminal, placing it on the cluster first when
no instance serves it (like 'ollama run'). With a prompt, or with text piped on
standard input, print one answer and exit.

With no model, start a node, as 'skulk serve' does; the node flags (--home,
--api-addr, …) apply only then.`,
		Example: `  skulk run stories260k                          # chat (/help lists the chat commands)
  skulk run stories260k "Once upon a time"       # one answer, then exit
  echo "Once upon a time" | skulk run stories260k
  skulk run                                      # start a node, as 'skulk serve' does
  skulk run --join skulk1:eyJrIjoi…              # start a node that joins a cluster`,
		ValidArgsFunction: completeModelFirst,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if f := changedFlag(cmd.Flags(), chatFlagNames); f != "" {
					return usageErrorf("--%s is a chat flag: name a model (skulk run MODEL --%s …), or see 'skulk serve --help'", f, f)
				}
				return serveNode(cmd, cfg, s)
			}
			if f := changedFlag(cmd.Flags(), nodeFlagNames(cmd)); f != "" {
				return usageErrorf("--%s is a node flag, and 'skulk run %s' chats with a model: start the node with 'skulk serve --%s …'", f, args[0], f)
			}
			return runModel(cmd, s, opts, args[0], strings.Join(args[1:], " "))
		},
	}
	nodeFlags(c.Flags(), &cfg)
	opts.register(c)
	return c
}

// chatFlagNames are the flags of 'skulk run MODEL' that a node does not take.
var chatFlagNames = []string{"host", apiKeyFileFlag, "system", "max-tokens", "temperature", "verbose"}

// nodeFlagNames are the node's flags on cmd: every flag but the chat ones.
func nodeFlagNames(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		for _, c := range chatFlagNames {
			if f.Name == c {
				return
			}
		}
		if f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	return names
}

// changedFlag is the first of names that was set on the command line.
func changedFlag(fs *pflag.FlagSet, names []string) string {
	for _, n := range names {
		if fs.Changed(n) {
			return n
		}
	}
	return ""
}

func serveNode(cmd *cobra.Command, cfg config.Node, s stdio) error {
	if fs := cmd.Flags(); fs.Changed("port") {
		if err := cfg.UsePort(cfg.Port, fs.Changed); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	log := newLogger(cfg, s)
	return node.Run(cmd.Context(), cfg, log, node.Options{Console: nodeConsole(s.out, cfg.Home, log)})
}

func newLogger(cfg config.Node, s stdio) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(s.err, opts))
	}
	return slog.New(slog.NewTextHandler(s.err, opts))
}

var _ = fmt.Sprint
