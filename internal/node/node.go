// Package node is the composition root of `skulk run`: it builds every
// subsystem from the configuration, starts them in order (event log and
// State, master, gateway, worker, HTTP API) and stops them in reverse.
package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/access"
	"github.com/skulk/skulk/internal/api"
	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/controlplane"
	"github.com/skulk/skulk/internal/election"
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/gateway"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/membership"
	"github.com/skulk/skulk/internal/replica"
	"github.com/skulk/skulk/internal/telemetry"
	"github.com/skulk/skulk/internal/transport"
	"github.com/skulk/skulk/internal/transport/clusterkey"
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
	// Console receives what the operator must see but the log must never
	// hold: the invite line of a new cluster. Nil discards it.
	Console io.Writer
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
	started := time.Now()

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

	mods, err := newModels(cfg, nodeID, log.With("component", "models"))
	if err != nil {
		return err
	}
	defer mods.close()
	card := mods.card
	imports, loopbackImports, err := importDirs(cfg, mods.store.Config().ModelsDir, log)
	if err != nil {
		return err
	}
	log.Info("models/import reads only under the import directories", "dirs", imports, "from_this_machine_also", loopbackImports)

	// Cluster plumbing: identity, transport, membership.
	secret, err := resolveClusterKey(cfg, log)
	if err != nil {
		return fmt.Errorf("node: cluster key: %w", err)
	}
	key := secret.key
	if secret.origin == "open" {
		log.Warn("open cluster: any host that reaches the gossip and QUIC ports can join this cluster and use its instances; restart without --open-cluster to require the cluster key")
	}
	bootstrap := append(append([]string{}, cfg.BootstrapPeers...), secret.peers...)
	ident, err := transport.LoadIdentity(cfg.Home, nodeID)
	if err != nil {
		return err
	}
	var p peers
	refused := &refusals{}
	ctl := controlplane.New(controlplane.Config{Node: nodeID, Log: elog, Card: card, Nodes: p.nodes, MaxPerModel: cfg.MaxInstancesPerModel,
		StartedAt: started, Version: SoftwareVersion, Commit: SoftwareCommit, Logger: log})
	responseStore, err := api.OpenResponseStore(filepath.Join(cfg.Home, "responses"), log.With("component", "api"))
	if err != nil {
		return fmt.Errorf("node: %w (the directory holds the conversations of stored responses; moving it aside starts an empty one)", err)
	}
	defer func() {
		if err := responseStore.Close(); err != nil {
			log.Warn("closing the response journal", "error", err)
		}
	}()
	w := worker.New(worker.Config{
		Node: nodeID, Master: ctl,
		Threads: cfg.Threads, Now: time.Now, NewID: newID,
		Spawn:   spawner(opt.RunnerCommand, cfg.Engine, log.With("component", "runner")),
		Resolve: mods.resolve,
		Guard:   guard(mods.catalog),
		Logger:  log.With("component", "worker"),
	})
	// A request goes straight from the node that owns it to the node of
	// its instance's first rank: in process here, over QUIC elsewhere.
	remote := &gateway.Remote{}
	defer remote.Wait()
	serve := func(ctx context.Context, node ids.NodeID, inst ids.InstanceID, task ids.TaskID, pl infer.TaskPayload) (<-chan infer.Chunk, error) {
		if node == nodeID {
			return w.Serve(ctx, inst, task, pl)
		}
		return remote.Serve(ctx, node, inst, task, pl)
	}
	gw := gateway.New(gateway.Config{Node: nodeID, Master: ctl, Serve: serve, Catalog: mods.catalog,
		Nodes: p.nodes, NewID: newID, Logger: log.With("component", "gateway"),
		Health:      health(nodeID, &p, telemetry.NewFreshness(telemetryInterval)),
		Diagnostics: diagnostics(nodeID, ctl, &p, refused)})
	ep, err := transport.Listen(transport.Config{
		Identity: ident, ClusterKey: key, ListenAddr: cfg.QUICAddr, Logger: log.With("component", "transport"), OnRefusal: refused.add,
		VerifyPeer: func(n ids.NodeID, k ed25519.PublicKey) error { return p.verify(n, k) },
		Handlers: map[string]transport.Handler{
			transport.ALPNControl: serveStreams(func(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser) {
				if !ctl.IsMaster() {
					s.Close() // a stale view of who is master: the follower re-resolves
					return
				}
				replica.Serve(ctx, ctl, c.Peer(), s)
			}),
			transport.ALPNData: serveStreams(func(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser) {
				gateway.ServeTask(ctx, s, w.Serve)
			}),
			transport.ALPNResponses: serveStreams(func(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser) {
				gateway.ServeResponseLookup(ctx, s, responseStore.Get)
			}),
		},
	})
	if err != nil {
		return fmt.Errorf("node: cannot listen for QUIC on %s (use --quic-addr): %w", cfg.QUICAddr, err)
	}
	defer ep.Close()
	remote.Dial = p.dial(ep, transport.ALPNData)

	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("node: cannot listen on %s (is another node running? use --api-addr): %w", cfg.APIAddr, err)
	}
	meta := membership.Meta{Node: nodeID, NetworkVersion: key.NetworkVersion(), SoftwareVersion: SoftwareVersion,
		Commit: SoftwareCommit, PublicKey: ident.PublicKey(),
		API: advertised(addrPort(ln.Addr())), QUIC: advertised(addrPort(ep.Addr()))}
	mem, err := membership.New(membership.Config{ClusterKey: key, Meta: meta, BindAddr: cfg.GossipAddr,
		BootstrapPeers: bootstrap, MDNS: !cfg.NoMDNS, Timing: clusterTiming(),
		Logger: log.With("component", "membership"), OnRefusal: refused.add})
	if err != nil {
		ln.Close()
		return fmt.Errorf("node: membership on %s (use --gossip-addr): %w", cfg.GossipAddr, err)
	}
	defer mem.Close()
	p.m.Store(mem)
	ctl.Dial = p.dial(ep, transport.ALPNControl)
	ctl.OnMaster = master.NodeLoss{Self: nodeID, Members: p.members, NewID: newID, Now: time.Now,
		Logger: log.With("component", "lifecycle")}.Run

	mods.attach(func(k string, v []byte) error { return mem.Publish(k, v) },
		func(ctx context.Context, ev event.Event) error {
			return ctl.Report(ctx, event.Source{Role: event.RoleWorker, Node: nodeID}, ev)
		})
	changed := make(chan struct{}, 1)
	elect := election.New(election.Config{Self: nodeID, Members: mem, Roles: ctl, Changed: changed,
		NetworkVer: key.NetworkVersion(), Logger: log.With("component", "election")})
	apiKeys, err := access.ParseKeys(cfg.APIKey, cfg.InferenceKeys)
	if err != nil {
		ln.Close()
		return err
	}
	acc := newAPIAccess(nodeID, apiKeys, access.NewHasher(key.Derive(clusterkey.PurposeAPIKeys)), cfg.APIOpen, ctl.State,
		func(ctx context.Context, ev event.Event) error {
			return ctl.Report(ctx, event.Source{Role: event.RoleWorker, Node: nodeID}, ev)
		}, log.With("component", "access"))
	logAPIExposure(log, cfg, len(apiKeys), ln.Addr())
	srv := &http.Server{
		Handler: api.New(api.Config{Access: acc.Policy, Responses: responseStore,
			PeerResponses: gateway.PeerResponses{Self: nodeID, Members: p.members, Dial: p.dial(ep, transport.ALPNResponses)}.Lookup,
		}, backend{Gateway: gw, ModelService: gateway.NewModels(gateway.ModelsConfig{
			Gateway: gw, Store: mods.store, Hub: mods.hub, Catalog: mods.catalog, Refresh: mods.refresh, Downloads: mods,
			ClusterDownloads: clusterDownloads(&p), ImportDirs: imports, LoopbackImportDirs: loopbackImports,
		})}, log.With("component", "api")),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	run("membership events", func() error {
		for ev := range mem.Events() {
			log.Info("membership", "event", ev.Kind.String(), "peer", ev.Node)
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		return nil
	})
	run("telemetry", func() error { publishResources(ctx, mem, cfg.MaxInstances, log); return nil })
	run("catalog", func() error { mods.rescan(ctx); return nil })
	run("election", func() error { return elect.Run(ctx) })
	run("worker", func() error { return w.Run(ctx) })
	run("api access", func() error { acc.run(ctx); return nil })
	run("api", func() error { return srv.Serve(ln) })
	gossipAddrs := advertisedGossip(cfg.GossipAddr, mem.GossipAddr())
	if err := writePeerHints(cfg.Home, gossipAddrs); err != nil {
		log.Warn("cannot record the gossip addresses for `skulk cluster invite`", "err", err)
	}
	if secret.origin == "generated" && opt.Console != nil {
		printNewCluster(opt.Console, key, gossipAddrs)
	}
	log.Info("serving", "api", ln.Addr().String(), "quic", ep.Addr().String(), "gossip", mem.GossipAddr().String(),
		"cluster_key", secret.origin)
	if opt.Ready != nil {
		opt.Ready(ln.Addr())
	}
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	srv.Shutdown(sctx)
	mem.Leave(sctx)
	scancel()
	ctl.Stop()
	mem.Close()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	log.Info("stopped")
	return nil
}

// serveStreams serves every stream of an inbound connection with f.
func serveStreams(f func(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser)) transport.Handler {
	return func(ctx context.Context, c *transport.Conn) {
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := stream{s}
				defer st.Close()
				f(ctx, c, st)
			}()
		}
	}
}

// clusterTiming is memberlist's failure detection tuned for a LAN: a dead
// node is declared gone within about two seconds, which bounds failover,
// with enough slack that a busy node is not declared dead by mistake (a
// false failure starts an election).
func clusterTiming() membership.Timing {
	return membership.Timing{
		ProbeInterval:    500 * time.Millisecond,
		ProbeTimeout:     400 * time.Millisecond,
		SuspicionMult:    3,
		GossipInterval:   100 * time.Millisecond,
		PushPullInterval: 5 * time.Second,
		TCPTimeout:       2 * time.Second,
	}
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
