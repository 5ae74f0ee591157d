// Package node is the composition root of `skulk run`: it builds every
// subsystem from the configuration, starts them in order (event log and
// State, master, gateway, worker, HTTP API) and stops them in reverse.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/api"
	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/gateway"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/telemetry"
	"github.com/skulk/skulk/internal/worker"
)

// Backend names the engine and compute this node offers.
const Backend = "native-cpu"

// Options are the parts of a node tests and the CLI may replace.
type Options struct {
	// RunnerCommand is the executable and leading arguments that start a
	// runner child; the default re-executes this binary as `skulk runner`.
	RunnerCommand []string
	// Ready is called with the API's bound address once the node serves.
	Ready func(addr net.Addr)
}

// Run starts a node and serves until ctx ends.
func Run(ctx context.Context, cfg config.Node, log *slog.Logger, opt Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Home, 0o755); err != nil {
		return fmt.Errorf("node: cannot create the home directory %s: %w", cfg.Home, err)
	}
	nodeID, err := loadNodeID(cfg.Home)
	if err != nil {
		return err
	}
	log = log.With("node", nodeID)
	log.Info("starting skulk node", "config", cfg.String())

	elog, err := eventlog.Open(filepath.Join(cfg.Home, "log"), eventlog.Options{
		OnDegraded: func(s eventlog.Status) {
			log.Error("event log degraded: events are counted but no longer written; free disk space and restart", "cause", s.Cause)
		},
	})
	if err != nil {
		return fmt.Errorf("node: open the event log: %w", err)
	}
	defer elog.Close()
	if rec := elog.Status().Recovery; rec.DroppedBytes > 0 {
		log.Warn("event log recovered from a torn or corrupt tail", "dropped_bytes", rec.DroppedBytes, "cause", rec.Cause)
	}
	st, err := master.Recover(elog)
	if err != nil {
		return err
	}
	log.Info("state recovered", "last_index", st.LastIndex, "instances", len(st.Instances))

	cat, errs := catalog.Build(catalog.Builtin{})
	for _, e := range errs {
		log.Warn("catalog", "err", e)
	}
	resources := func() []placement.Node {
		m, err := telemetry.ReadMemory()
		if err != nil {
			log.Warn("cannot read memory; placement will wait for a reading", "err", err)
			return []placement.Node{{ID: string(nodeID), Backends: []string{Backend}, Pending: true}}
		}
		return []placement.Node{{ID: string(nodeID), TotalBytes: m.TotalBytes, AvailableBytes: m.AvailableBytes, Backends: []string{Backend}}}
	}
	m := master.New(master.Config{
		Node: nodeID, Log: elog, State: st, Now: time.Now, Nodes: resources, Logger: log.With("component", "master"),
		Card: func(id ids.ModelID) (catalog.Card, bool) { return cat.Get(string(id)) },
	})
	gw := gateway.New(gateway.Config{Node: nodeID, Master: m, Catalog: func() *catalog.Catalog { return cat },
		Nodes: resources, NewID: newID, Logger: log.With("component", "gateway")})
	models := filepath.Join(cfg.Home, "models")
	w := worker.New(worker.Config{
		Node: nodeID, Master: m, Tasks: gw, Threads: cfg.Threads, Now: time.Now, NewID: newID,
		Spawn: spawner(opt.RunnerCommand, log.With("component", "runner")),
		Resolve: func(ctx context.Context, model ids.ModelID) (worker.Model, error) {
			card, ok := cat.Get(string(model))
			if !ok {
				return worker.Model{}, fmt.Errorf("model %s is not in the catalog", model)
			}
			if !card.Builtin {
				return worker.Model{}, fmt.Errorf("model %s has no local weights (downloads come with the catalog)", model)
			}
			path, err := catalog.MaterializeBuiltin(models)
			return worker.Model{Path: path, ChatTemplate: card.ChatTemplate}, err
		},
		Guard:  guard(cat),
		Logger: log.With("component", "worker"),
	})

	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("node: cannot listen on %s (is another node running? use --api-addr): %w", cfg.APIAddr, err)
	}
	srv := &http.Server{
		Handler:           api.New(api.Config{APIKey: cfg.APIKey}, gw, log.With("component", "api")),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
			cancel()
		}()
	}
	run("master", func() error { return m.Run(ctx) })
	run("worker", func() error { return w.Run(ctx) })
	run("api", func() error { return srv.Serve(ln) })
	log.Info("serving", "api", ln.Addr().String())
	if opt.Ready != nil {
		opt.Ready(ln.Addr())
	}
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	srv.Shutdown(sctx)
	scancel()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	log.Info("stopped")
	return nil
}

// loadNodeID reads the node's id from its home, minting one on first start.
func loadNodeID(home string) (ids.NodeID, error) {
	p := filepath.Join(home, "node-id")
	if b, err := os.ReadFile(p); err == nil {
		return ids.ParseNodeID(strings.TrimSpace(string(b)))
	}
	id, err := ids.New[ids.NodeID](rand.Reader)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(p, []byte(string(id)+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("node: write %s: %w", p, err)
	}
	return id, nil
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
