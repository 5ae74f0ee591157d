package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/node"
)

func runRun(ctx context.Context, args []string, s stdio) error {
	cfg := config.FromEnv(os.Getenv)
	fs := newFlagSet("run", s)
	fs.StringVar(&cfg.Home, "home", cfg.Home, "state directory (SKULK_HOME)")
	fs.StringVar(&cfg.APIAddr, "api-addr", cfg.APIAddr, "HTTP API address HOST:PORT (SKULK_API_ADDR)")
	fs.BoolVar(&cfg.Offline, "offline", cfg.Offline, "never use the network for models (SKULK_OFFLINE=1, true, yes or on)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "log format: text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "engine threads per runner (0 = physical cores)")
	fs.IntVar(&cfg.MaxInstances, "max-instances", cfg.MaxInstances, "most runners the cluster may place on this node (SKULK_MAX_INSTANCES; 0 = 16)")
	fs.IntVar(&cfg.MaxInstancesPerModel, "max-instances-per-model", cfg.MaxInstancesPerModel, "most instances of one model in the cluster while this node is master (SKULK_MAX_INSTANCES_PER_MODEL; 0 = 16)")
	fs.IntVar(&cfg.MaxConnsPerClient, "max-conns-per-client", cfg.MaxConnsPerClient,
		"API connections one client address may hold open; more are answered 429 (0 = no limit; SKULK_MAX_CONNS_PER_CLIENT)")
	fs.StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "membership gossip address HOST:PORT")
	fs.StringVar(&cfg.QUICAddr, "quic-addr", cfg.QUICAddr, "QUIC transport address HOST:PORT")
	fs.BoolVar(&cfg.NoMDNS, "no-mdns", cfg.NoMDNS, "do not discover peers by mDNS")
	fs.Func("bootstrap-peers", "comma-separated gossip addresses HOST:PORT of nodes to join (SKULK_BOOTSTRAP_PEERS)", func(v string) error {
		cfg.BootstrapPeers = append(cfg.BootstrapPeers, config.SplitList(v)...)
		return nil
	})
	fs.StringVar(&cfg.Join, "join", cfg.Join, "join a cluster with the invite line a member printed (`skulk cluster invite`)")
	fs.BoolVar(&cfg.OpenCluster, "open-cluster", cfg.OpenCluster, "let any host that reaches the gossip port join, without the cluster key (warned at every start)")
	fs.Func("memory-budget", "cap the memory placement may count on this node: bytes or 8GiB, 512MiB (SKULK_MEMORY_BUDGET; default the machine's)", func(v string) error {
		b, err := config.ParseBytes(v)
		cfg.MemoryBudget = b
		return err
	})
	fs.BoolVar(&cfg.APIOpen, "api-open", cfg.APIOpen, "serve API clients on every address without a key when none is set (SKULK_API_OPEN=1; warned at start)")
	fs.BoolVar(&cfg.MetricsPublic, "metrics-public", cfg.MetricsPublic, "serve GET /metrics to every address without a key (SKULK_METRICS_PUBLIC=1)")
	envImportDirs := true
	fs.Func("import-dir", "a directory POST /models/import may read under; repeat or comma-separate (SKULK_IMPORT_DIRS; default: the models directory's import/, and your home for requests from this machine)", func(v string) error {
		if envImportDirs { // the flags replace the environment's list
			cfg.ImportDirs, envImportDirs = nil, false
		}
		cfg.ImportDirs = append(cfg.ImportDirs, config.SplitList(v)...)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	return node.Run(ctx, cfg, newLogger(cfg, s), node.Options{Console: s.out})
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
