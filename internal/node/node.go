// Package node is the composition root of `skulk run`: it builds every
// subsystem from the configuration and starts them in order (event log,
// model library, the control plane (a member of the cluster's Raft group,
// master while it leads), gateway, QUIC transport and the pipeline links'
// edge socket, membership, worker, model administration and the HTTP API),
// and stops them in reverse. It holds no job of its own: each part lives in
// its room (internal/serving/link, internal/serving/diagnostics,
// internal/models/library, internal/platform/homedir, ...), and the node
// joins them with closures: peers (cluster.go) is the membership and the
// transport as the parts use them, observe.go feeds the metrics, the
// dashboard and the diagnostics, backend.go the API.
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
	"slices"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/consensus"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/forward"
	"github.com/skulk/skulk/internal/control/master"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/models/library"
	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/observe/dashboard"
	"github.com/skulk/skulk/internal/observe/metrics"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/homedir"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
	"github.com/skulk/skulk/internal/serving/access"
	"github.com/skulk/skulk/internal/serving/api"
	"github.com/skulk/skulk/internal/serving/connlimit"
	"github.com/skulk/skulk/internal/serving/diagnostics"
	"github.com/skulk/skulk/internal/serving/gateway"
	"github.com/skulk/skulk/internal/serving/link"
	"github.com/skulk/skulk/internal/serving/responsestore"
	"github.com/skulk/skulk/internal/serving/worker"
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

// Run starts a node and serves until ctx ends. Each step below opens one
// layer of the node and registers how to close it; the node closes them in
// reverse when it stops or when a later step fails.
func Run(ctx context.Context, cfg config.Node, log *slog.Logger, opt Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n := &fabric{cfg: cfg, opt: opt, started: time.Now(), log: log,
		metrics: metrics.New(metrics.Build{Version: SoftwareVersion, Commit: SoftwareCommit}), timeline: diagnostics.NewRecorder(time.Now),
		traces: trace.NewStore(trace.DefaultCapacity, trace.DefaultMaxAge, time.Now)}
	defer n.close()
	for _, step := range []func() error{n.openHome, n.openStores, n.openCluster, n.buildServices, n.openListeners, n.joinCluster, n.buildAPI} {
		if err := step(); err != nil {
			return err
		}
	}
	return n.serve(ctx)
}

// fabric is one node's parts, as Run assembles them.
type fabric struct {
	cfg      config.Node
	opt      Options
	started  time.Time
	log      *slog.Logger // with the node's id once openHome has read it
	closers  []func()     // in opening order; close runs them in reverse
	metrics  *metrics.Metrics
	timeline *diagnostics.Recorder
	traces   *trace.Store // the requests this node answered, while tracing was on

	id        ids.NodeID
	elog      *eventlog.Log
	persist   *diagnostics.Persistence
	upgraded  *state.State // the previous format's history, when this start converts it
	mods      *library.Library
	names     shortname.Library // the short model names (qwen3:8b) requests and pulls may use
	imports   []string          // the import directories, and those for loopback clients
	loopImp   []string
	responses *responsestore.Store
	secret    homedir.Secret
	bootstrap []string
	ident     *transport.Identity
	peers     peers
	refused   diagnostics.Refusals
	seen      diagnostics.Seen
	diag      diagnostics.Sources
	ctl       *plane.Plane
	worker    *worker.Worker
	remote    *gateway.Remote
	gw        *gateway.Gateway
	ep        *transport.Endpoint
	ln        *connlimit.Listener
	edges     *link.Edges
	mem       *membership.Membership
	access    *access.Live
	srv       *http.Server
	dash      *dashboard.Broker
}

func (n *fabric) onClose(f func()) { n.closers = append(n.closers, f) }

func (n *fabric) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// openHome creates the home directory and reads (or mints) the node's id.
func (n *fabric) openHome() error {
	if err := os.MkdirAll(n.cfg.Home, 0o755); err != nil {
		return fmt.Errorf("node: cannot create the home directory %s: %w", n.cfg.Home, err)
	}
	unlock, err := homedir.Lock(n.cfg.Home)
	if err != nil {
		return err
	}
	n.onClose(unlock)
	id, err := homedir.NodeID(n.cfg.Home)
	if err != nil {
		return err
	}
	n.id = id
	n.log = n.log.With("node", id)
	n.log.Info("starting skulk node", "name", n.cfg.NodeName(), "version", SoftwareVersion, "commit", SoftwareCommit, "config", n.cfg.String())
	return nil
}

// openStores opens what the node keeps on disk: the event log, the models
// and the response journal.
func (n *fabric) openStores() error {
	log := n.log
	logDir := diagnostics.LogDir(n.cfg.Home)
	n.persist = diagnostics.NewPersistence(logDir, log.With("component", "persistence"))
	elog, err := eventlog.Open(logDir, n.persist.LogOptions(n.cfg.LogFreeFloor))
	if err != nil {
		return fmt.Errorf("node: open the event log in %s: %w", logDir, err)
	}
	n.elog = elog
	n.onClose(func() { elog.Close() })
	n.persist.LogChanged(elog.Status())
	n.noteLoss(elog.Status().Recovery)
	if n.upgraded, err = diagnostics.ReadLegacyLog(n.cfg.Home, elog, log); err != nil {
		return err
	}
	mods, err := library.New(n.cfg, n.id, n.metrics, log.With("component", "models"))
	if err != nil {
		return err
	}
	n.mods = mods
	n.onClose(mods.Close)
	if n.names, err = shortname.Builtin(); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.imports, n.loopImp, err = library.ImportDirs(n.cfg, mods.Store().Config().ModelsDir, log)
	if err != nil {
		return err
	}
	log.Info("models/import reads only under the import directories", "dirs", n.imports, "from_this_machine_also", n.loopImp)
	responses, err := responsestore.Open(filepath.Join(n.cfg.Home, "responses"), log.With("component", "api"))
	if err != nil {
		return fmt.Errorf("node: %w (the directory holds the conversations of stored responses; moving it aside starts an empty one)", err)
	}
	n.responses = responses
	n.persist.Responses = responses
	n.onClose(func() {
		if err := responses.Close(); err != nil {
			log.Warn("closing the response journal", "error", err)
		}
	})
	return nil
}

// openCluster settles the node's cluster identity: the cluster key and
// where the invite says the members are, and the node's own certificate.
func (n *fabric) openCluster() error {
	secret, err := homedir.ClusterKey(n.cfg, n.log)
	if err != nil {
		return fmt.Errorf("node: cluster key: %w", err)
	}
	n.secret = secret
	if secret.Origin == "open" {
		n.log.Warn("open cluster: any host that reaches the gossip and QUIC ports can join this cluster and use its instances; restart without --open-cluster to require the cluster key")
	}
	n.bootstrap = append(append([]string{}, n.cfg.BootstrapPeers...), secret.Peers...)
	n.ident, err = transport.LoadIdentity(n.cfg.Home, n.id)
	return err
}

// buildServices builds the control plane, the worker and the gateway. A
// request goes straight from the node that owns it to the node of its
// instance's first rank: in process here, over QUIC elsewhere.
func (n *fabric) buildServices() error {
	log := n.log
	cfg := plane.Config{Node: n.id, Log: n.elog, Card: n.mods.Card, Nodes: n.peers.nodes,
		MaxPerModel: n.cfg.MaxInstancesPerModel, StartedAt: n.started, Version: SoftwareVersion, Commit: SoftwareCommit, Logger: log,
		Found: n.secret.Origin == "generated", Bootstrapping: len(n.bootstrap) > 0, VoterTimeout: n.cfg.VoterTimeout,
		UnsafeAckBeforeCommit: os.Getenv("SKULK_TEST_UNSAFE_ACK") == "1"}
	if cfg.UnsafeAckBeforeCommit {
		log.Error("SKULK_TEST_UNSAFE_ACK=1: this node acknowledges decisions before a majority holds them, so a partition can lose them; " +
			"it exists for the consensus test only, never run a cluster with it")
	}
	if n.upgraded != nil {
		cfg.Found, cfg.Initial = true, n.upgraded
	}
	ctl, err := plane.New(cfg)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.ctl = ctl
	n.diag = diagnostics.Sources{Self: n.id, Name: n.cfg.NodeName(), Version: SoftwareVersion, Plane: ctl, Membership: n.peers.get, Own: n.persist,
		Refused: &n.refused, Seen: &n.seen, Edges: func() *link.Edges { return n.edges }}
	n.mods.AttachState(func() state.State { st, _ := ctl.State(context.Background()); return st })
	n.worker = worker.New(worker.Config{
		Node: n.id, Master: n.ctl,
		Threads: n.cfg.Threads, Now: time.Now, NewID: newID,
		Spawn:   worker.Spawner(n.opt.RunnerCommand, n.cfg.Engine, log.With("component", "runner")),
		Resolve: n.resolve,
		Guard:   worker.MemoryGuard(n.mods.Catalog, n.cfg.MemoryBudget),
		Edges:   func(inst ids.InstanceID, placement []event.Shard) string { return n.edges.SocketFor(inst, placement) },
		// A stage waits for its links past the master's deadline: the
		// master, which can say which edge failed, decides.
		EdgeConnectTimeout: n.groupConnectTimeout() + edgeWaitSlack,
		Logger:             log.With("component", "worker"),
	})
	n.remote = &gateway.Remote{}
	n.onClose(n.remote.Wait)
	n.gw = gateway.New(gateway.Config{Node: n.id, Master: n.ctl, Local: n.worker.Serve, Remote: n.remote.Serve, Catalog: n.mods.Catalog,
		Nodes: n.peers.nodes, NewID: newID, Logger: log.With("component", "gateway"), Observer: n.metrics, KeepAlive: n.cfg.KeepAlive,
		Resolve:     modeladmin.Resolver(n.mods.Catalog, n.names),
		Health:      diagnostics.Health(n.diag, telemetry.NewFreshness(telemetry.Interval)),
		Diagnostics: diagnostics.Cluster(n.diag)})
	return nil
}

// openListeners binds the QUIC endpoint (control, data and response
// lookups from other nodes) and the API's TCP port.
func (n *fabric) openListeners() error {
	// The edge socket first: the QUIC endpoint's edge streams need it.
	edges, eln, err := link.Open(n.cfg.Home, n.id, func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error) {
		return n.peers.dial(n.ep, transport.ALPNEdge)(ctx, node)
	}, n.log.With("component", "edges"))
	if err != nil {
		return err
	}
	n.edges = edges
	edges.Relay.Wait = n.groupConnectTimeout() + edgeWaitSlack
	ectx, stopEdges := context.WithCancel(context.Background())
	go edges.Serve(ectx, eln)
	n.onClose(func() { stopEdges(); eln.Close() })
	ep, err := transport.Listen(transport.Config{
		Identity: n.ident, ClusterKey: n.secret.Key, ListenAddr: n.cfg.QUICAddr, Logger: n.log.With("component", "transport"),
		OnRefusal:  n.refused.Add,
		VerifyPeer: func(id ids.NodeID, k ed25519.PublicKey) error { return n.peers.verify(id, k) },
		Handlers: map[string]transport.Handler{
			transport.ALPNControl:   transport.ServeStreams(n.serveControl),
			transport.ALPNRaft:      transport.ServeStreams(n.serveRaft),
			transport.ALPNData:      transport.ServeStreams(n.serveData),
			transport.ALPNResponses: transport.ServeStreams(n.serveResponseLookup),
			transport.ALPNEdge:      transport.ServeStreams(func(ctx context.Context, _ *transport.Conn, s io.ReadWriteCloser) { n.edges.Accept(ctx, s) }),
			transport.ALPNTensors:   transport.ServeStreams(n.serveTensors),
		},
	})
	if err != nil {
		return fmt.Errorf("node: cannot listen for QUIC on %s (use --quic-addr): %w", n.cfg.QUICAddr, err)
	}
	n.ep = ep
	n.peers.quicBind = boundAddr(n.cfg.QUICAddr, ep.Addr()).Addr()
	n.onClose(func() { ep.Close() })
	n.remote.Dial = transport.DialLive(n.peers.dial(ep, transport.ALPNData), n.peers.alive)
	ln, err := net.Listen("tcp", n.cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("node: cannot listen on %s (is another node running? use --api-addr): %w", n.cfg.APIAddr, err)
	}
	n.ln = connlimit.New(ln, connlimit.Config{PerClient: n.cfg.MaxConnsPerClient, Total: n.cfg.MaxConns,
		Refused: logRefusals(n.log.With("component", "api"))})
	n.onClose(func() { n.ln.Close() })
	return nil
}

// serveControl serves what a follower forwards to the leader.
func (n *fabric) serveControl(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser) {
	forward.Serve(ctx, n.ctl.AsLeader(), c.Peer(), s)
}

// serveRaft steps a peer's raft messages; the transport authenticated the
// peer, and a message must come from its raft id.
func (n *fabric) serveRaft(ctx context.Context, c *transport.Conn, s io.ReadWriteCloser) {
	if err := consensus.Serve(ctx, n.ctl.Raft(), consensus.RaftID(c.Peer()), s); err != nil && ctx.Err() == nil {
		n.log.Debug("raft stream ended", "peer", c.Peer(), "err", err)
	}
}

// serveData runs a task another node owns.
func (n *fabric) serveData(ctx context.Context, _ *transport.Conn, s io.ReadWriteCloser) {
	gateway.ServeTask(ctx, s, n.id, n.gw.Serve)
}

// serveResponseLookup answers another node's previous_response_id lookup.
func (n *fabric) serveResponseLookup(ctx context.Context, _ *transport.Conn, s io.ReadWriteCloser) {
	gateway.ServeResponseLookup(ctx, s, n.responses.Get)
}

// joinCluster starts the membership (gossip, mDNS) and gives the control
// plane its duties.
func (n *fabric) joinCluster() error {
	key := n.secret.Key
	meta := membership.Meta{Node: n.id, NetworkVersion: key.NetworkVersion(), SoftwareVersion: SoftwareVersion,
		Commit: SoftwareCommit, PublicKey: n.ident.PublicKey(),
		API: membership.Advertised(boundAddr(n.cfg.APIAddr, n.ln.Addr())), QUIC: membership.Advertised(boundAddr(n.cfg.QUICAddr, n.ep.Addr()))}
	// The members the replicated configuration names: a restarted node
	// finds its cluster again with no flags.
	bootstrap := n.bootstrap
	for _, m := range n.ctl.KnownMembers() {
		if m.Gossip != "" && !slices.Contains(bootstrap, m.Gossip) {
			bootstrap = append(bootstrap, m.Gossip)
		}
	}
	mem, err := membership.New(membership.Config{ClusterKey: key, Meta: meta, BindAddr: n.cfg.GossipAddr,
		BootstrapPeers: bootstrap, MDNS: !n.cfg.NoMDNS, Timing: clusterTiming(),
		Logger: n.log.With("component", "membership"), OnRefusal: n.refused.Add})
	if err != nil {
		return fmt.Errorf("node: membership on %s (use --gossip-addr): %w", n.cfg.GossipAddr, err)
	}
	n.mem = mem
	n.onClose(func() { mem.Close() })
	n.peers.m.Store(mem)
	n.ctl.Dial = n.peers.dial(n.ep, transport.ALPNControl)
	n.ctl.RaftDial = func(ctx context.Context, node ids.NodeID) (io.WriteCloser, error) {
		return n.peers.dial(n.ep, transport.ALPNRaft)(ctx, node)
	}
	n.ctl.Peers = n.peers.positions
	n.ctl.OnLeader = func(leader ids.NodeID, term uint64) {
		switch leader {
		case "":
			n.timeline.Add("LeaderLost", n.id, fmt.Sprintf("this node knows no leader (term %d): an election is under way", term))
		case n.id:
			n.timeline.Add("BecameMaster", n.id, fmt.Sprintf("this node leads the cluster in term %d", term))
		default:
			n.timeline.Add("BecameFollower", n.id, fmt.Sprintf("this node follows master %s in term %d", leader, term))
		}
	}
	loss := master.NodeLoss{Self: n.id, Members: n.peers.members, NewID: newID, Now: time.Now, Started: n.started,
		Logger: n.log.With("component", "lifecycle")}
	group := master.GroupConnect{Self: n.id, Timeout: n.groupConnectTimeout(), Link: n.edges.LinkState(n.peers.get),
		NewID: newID, Now: time.Now, Logger: n.log.With("component", "lifecycle")}
	n.ctl.OnMaster = func(ctx context.Context, m *master.Master) {
		var wg sync.WaitGroup
		wg.Go(func() { loss.Run(ctx, m) })
		group.Run(ctx, m)
		wg.Wait()
	}
	n.mods.Attach(func(k string, v []byte) error { return mem.Publish(k, v) }, n.reportAsWorker)
	n.mods.AttachPeers(n.peers.dial(n.ep, transport.ALPNTensors), library.TensorSources(n.id, n.ctl.State, n.peers.members))
	return nil
}

// noteLoss reports history the event log lost when it opened: the node
// serves on with the log's good part (and an error in its health) until it
// takes the history back from a master or an operator acknowledges it.
func (n *fabric) noteLoss(rec eventlog.Recovery) {
	switch {
	case rec.Loss != nil:
		n.persist.SetLoss(rec.Loss)
		n.log.Error("the event log lost history: this node will not lead with it while another member holds more; it takes the history back "+
			"from the master, or run `skulk doctor --ack-log-loss` to go on without it", "lost_after", rec.Loss.After, "saved", rec.Loss.Saved,
			"cause", rec.Loss.Cause)
	case rec.DroppedBytes > 0:
		n.log.Warn("event log recovered from a torn tail (a write a crash cut short)", "dropped_bytes", rec.DroppedBytes, "cause", rec.Cause)
	}
}

// recoverCluster makes this node the only voter; refused while the
// cluster can decide.
func (n *fabric) recoverCluster(ctx context.Context) error {
	if err := n.ctl.Recover(ctx); err != nil {
		if errors.Is(err, plane.ErrMajorityReachable) {
			return &fault.Error{Class: fault.ClassConflict, Code: "quorum_reachable", Message: err.Error()}
		}
		return err
	}
	n.timeline.Add("ClusterRecovered", n.id, "the operator made this node the only voter (skulk cluster recover)")
	return nil
}

// reportAsWorker reports a fact about this node to the master.
func (n *fabric) reportAsWorker(ctx context.Context, ev event.Event) error {
	return n.ctl.Report(ctx, event.Source{Role: event.RoleWorker, Node: n.id}, ev)
}

// buildAPI builds the access policy and the HTTP server.
func (n *fabric) buildAPI() error {
	cfg, log := n.cfg, n.log
	apiKeys, err := access.ParseKeys(cfg.APIKey, cfg.InferenceKeys)
	if err != nil {
		return err
	}
	hasher := access.NewHasher(n.secret.Key.Derive(clusterkey.PurposeAPIKeys))
	n.access = access.NewLive(n.id, apiKeys, hasher, cfg.APIOpen,
		n.ctl.State, n.reportAsWorker, log.With("component", "access"))
	keys := access.NewKeys(access.KeysConfig{Self: n.id, Hasher: hasher, State: n.ctl.State, Execute: n.ctl.Execute,
		NewID: newID, Changed: n.access.Refresh})
	access.LogExposure(log, cfg, len(apiKeys), n.ln.Addr())
	n.watchMetrics()
	models := modeladmin.New(modeladmin.Config{
		Cluster: n.ctl, Store: n.mods.Store(), Hub: n.mods.Hub(), Catalog: n.mods.Catalog, Refresh: n.mods.Refresh, Imported: n.mods.Imported, FilesRemoved: n.mods.FilesRemoved, Downloads: n.mods,
		Share: library.Share(n.ctl, newID), Unshare: library.Unshare(n.ctl, newID),
		ClusterDownloads: library.ClusterDownloads(n.peers.get), ImportDirs: n.imports, LoopbackImportDirs: n.loopImp,
		Library: n.names,
	})
	frames, idle := dashboard.Frames(n.dashboardSources(), log.With("component", "dashboard"))
	n.dash = dashboard.NewBroker(dashboard.BrokerConfig{Frames: frames, Idle: idle, Changed: n.timeline.Changed(),
		Logger: log.With("component", "dashboard")})
	n.srv = &http.Server{
		Handler: api.New(api.Config{Dashboard: dashboard.Assets(), DashboardEvents: n.dash, Access: n.access.Policy, Responses: n.responses, BodyTimeout: cfg.HTTPBodyTimeout,
			PeerResponses: gateway.PeerResponses{Self: n.id, Members: n.peers.members, Dial: n.peers.dial(n.ep, transport.ALPNResponses)}.Lookup,
			Metrics:       n.metrics.Handler(), MetricsPublic: cfg.MetricsPublic, Observe: n.observeRequest,
			Warning: func() string { return diagnostics.Warning(n.diag) }, Traces: n.traces,
			ClientConn: func(ctx context.Context, digest, name string) error {
				return n.ln.Claim(ctx, connlimit.Client{Key: digest, Name: name})
			},
		}, backend{Gateway: n.gw, Service: models, Recorder: n.timeline, node: n.nodeDiagnostics(), recoverCluster: n.recoverCluster, keys: keys}.backends(), log.With("component", "api")),
		ConnState:         n.ln.ConnState, // the connection limit closes idle connections to make room
		ConnContext:       n.ln.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.HTTPIdleTimeout, // 0: idle connections stay (there is no ReadTimeout to fall back to)
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return nil
}

// serve runs every long-lived part until ctx ends or one of them fails,
// then stops them: the API first, then the membership (leaving gracefully),
// the control plane, and the rest in reverse as Run's close does.
func (n *fabric) serve(ctx context.Context) error {
	log := n.log
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	run := func(name string, f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		})
	}
	run("membership events", func() error {
		for ev := range n.mem.Events() {
			log.Info("membership", "event", ev.Kind.String(), "peer", ev.Node)
			n.seen.Remember(membership.Member{Node: ev.Node, Meta: ev.Meta, Gossip: ev.Gossip})
			n.timeline.Member(ev)
		}
		return nil
	})
	run("telemetry", func() error {
		telemetry.PublishResources(ctx, telemetry.Publisher{Publish: n.mem.Publish, RTTs: n.mem.RTTs, Limit: membership.MaxReadingValue,
			Backends: []string{Backend}, MaxInstances: n.cfg.MaxInstances, Budget: n.cfg.MemoryBudget,
			Kernels: diagnostics.Kernels(n.cfg.Engine.Kernels), Name: n.cfg.NodeName(), Logger: log})
		return nil
	})
	run("catalog", func() error { n.mods.Rescan(ctx); return nil })
	run("persistence", func() error { n.persist.Run(ctx, n.mem.Publish); return nil })
	run("edges", func() error {
		n.edges.Publish(ctx, n.mem, n.ctl.State, log.With("component", "edges"))
		return nil
	})
	run("control plane", func() error { return n.ctl.Run(ctx) })
	run("position", func() error { diagnostics.PublishPosition(ctx, n.ctl.Position, n.mem.Publish); return nil })
	run("timeline", func() error { n.timeline.Follow(ctx, n.ctl); return nil })
	run("worker", func() error { return n.worker.Run(ctx) })
	run("idle unloads", func() error { n.gw.Run(ctx); return nil })
	run("api access", func() error { n.access.Run(ctx); return nil })
	run("dashboard", func() error { n.dash.Run(ctx); return nil })
	run("api", func() error { return n.srv.Serve(n.ln) })
	n.announce()
	<-ctx.Done()
	// The cause names the signal (Ctrl-C: "interrupt signal received") or
	// the part that failed.
	log.Info("stopping", "reason", context.Cause(ctx).Error())
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	n.srv.Shutdown(sctx)
	n.mem.Leave(sctx)
	scancel()
	n.mem.Close()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	log.Info("stopped")
	return nil
}

// announce records the gossip addresses for invites, prints the invite of
// a new cluster, and says the node serves.
func (n *fabric) announce() {
	gossipAddrs := advertisedGossip(n.cfg.GossipAddr, n.mem.GossipAddr())
	if err := homedir.WritePeerHints(n.cfg.Home, gossipAddrs); err != nil {
		n.log.Warn("cannot record the gossip addresses for `skulk cluster invite`", "err", err)
	}
	if n.secret.Origin == "generated" && n.opt.Console != nil {
		homedir.PrintNewCluster(n.opt.Console, n.secret.Key, gossipAddrs)
	}
	n.log.Info("serving", "name", n.cfg.NodeName(), "api", n.ln.Addr().String(), "quic", n.ep.Addr().String(), "gossip", n.mem.GossipAddr().String(),
		"cluster_key", n.secret.Origin)
	if n.opt.Ready != nil {
		n.opt.Ready(n.ln.Addr())
	}
}

// logRefusals returns the connection limit's report of a refused
// connection: a warning at most every ten seconds, counting the refusals
// since the last one, so a flood of connections does not flood the log.
func logRefusals(log *slog.Logger) func(connlimit.Refusal) {
	var mu sync.Mutex
	var last time.Time
	refused := 0
	return func(r connlimit.Refusal) {
		mu.Lock()
		defer mu.Unlock()
		refused++
		if time.Since(last) < 10*time.Second {
			return
		}
		bound := "the per-client limit (--max-conns-per-client)"
		if r.Total {
			bound = "the node's limit (--max-conns)"
		}
		log.Warn("refused connections over "+bound, "client", r.Client, "limit", r.Limit, "refused", refused)
		last, refused = time.Now(), 0
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

// edgeWaitSlack is how much longer than the group-connect deadline a
// stage and the relay wait for a link.
const edgeWaitSlack = 15 * time.Second

// groupConnectTimeout is --group-connect-timeout, or its default.
func (n *fabric) groupConnectTimeout() time.Duration {
	if n.cfg.GroupConnectTimeout > 0 {
		return n.cfg.GroupConnectTimeout
	}
	return master.DefaultGroupConnectTimeout
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
