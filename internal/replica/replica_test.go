package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/catalog"
	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/master"
	"github.com/skulk/skulk/internal/placement"
	"github.com/skulk/skulk/internal/state"
	"github.com/skulk/skulk/internal/testkit"
)

const (
	masterNode   = ids.NodeID("node-m")
	followerNode = ids.NodeID("node-f")
)

type cluster struct {
	t      *testing.T
	m      *master.Master
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// startMaster runs a master on a real event log and serves the replica
// protocol on a loopback TCP listener.
func startMaster(t *testing.T, dir string) *cluster {
	t.Helper()
	log, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor, Sync: eventlog.SyncManual})
	if err != nil {
		t.Fatal(err)
	}
	st, err := master.Recover(log)
	if err != nil {
		t.Fatal(err)
	}
	card, _ := catalog.BuiltinCard()
	m := master.New(master.Config{
		Node: masterNode, Log: log, State: st, Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) },
		Card: func(id ids.ModelID) (catalog.Card, bool) { return card, string(id) == card.ID },
		Nodes: func() []placement.Node {
			return []placement.Node{{ID: string(masterNode), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}}}
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{t: t, m: m, ln: ln, cancel: cancel}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); m.Run(ctx) }()
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
			c.wg.Add(1)
			go func() { defer c.wg.Done(); Serve(ctx, m, followerNode, conn) }()
		}
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		c.cutConnections()
		c.wg.Wait()
		log.Close()
	})
	return c
}

// cutConnections closes every accepted connection, as a network cut would.
func (c *cluster) cutConnections() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func (c *cluster) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", c.ln.Addr().String())
}

func startFollower(t *testing.T, c *cluster, dir string, fresh bool, terms ...Terms) *Follower {
	t.Helper()
	log, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor, Sync: eventlog.SyncManual})
	if err != nil {
		t.Fatal(err)
	}
	st, err := master.Recover(log)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Node: followerNode, Log: log, State: st, Dial: c.dial, Fresh: fresh, RetryDelay: 20 * time.Millisecond}
	if len(terms) > 0 {
		cfg.Terms = terms[0]
	}
	f := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; log.Close() })
	return f
}

func place(t *testing.T, exec func(context.Context, event.Command) ([]event.IndexedEvent, error), id string) {
	t.Helper()
	if _, err := exec(context.Background(), event.PlaceInstance{ID: ids.CommandID(id), Model: catalog.BuiltinID}); err != nil {
		t.Fatal(err)
	}
}

// converge waits until the follower's State is byte-identical to the master's.
func converge(t *testing.T, c *cluster, f *Follower) state.State {
	t.Helper()
	ctx := context.Background()
	var ms, fs state.State
	testkit.Eventually(t, 10*time.Second, "the follower to converge on the master's State", func() bool {
		var err error
		ms, _ = c.m.State(ctx)
		fs, err = f.State(ctx)
		return err == nil && state.Hash(ms) == state.Hash(fs)
	})
	return fs
}

func TestFollowForwardAndReconnect(t *testing.T) {
	testkit.NoLeaks(t)
	c := startMaster(t, t.TempDir())
	place(t, c.m.Execute, "p-1")
	f := startFollower(t, c, t.TempDir(), false)
	converge(t, c, f)
	sub, err := f.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}

	// A command sent through the follower is indexed by the master.
	evs, err := f.Execute(context.Background(), event.PlaceInstance{ID: "p-2", Model: catalog.BuiltinID})
	if err != nil || len(evs) != 1 {
		t.Fatalf("forwarded command: %v %v", evs, err)
	}
	st := converge(t, c, f)
	if _, ok := st.Instances["p-2"]; !ok {
		t.Fatal("the follower's State lacks the forwarded placement")
	}
	// Errors keep their class and status across the wire.
	_, err = f.Execute(context.Background(), event.PlaceInstance{ID: "p-3", Model: "nope"})
	var re *RemoteError
	if !errors.As(err, &re) || re.HTTPStatus() != 404 || infer.ClassOf(err) != infer.ClassNotFound {
		t.Fatalf("unknown model through the follower: %v", err)
	}
	_, err = f.Execute(context.Background(), event.PlaceInstance{ID: "p-4", Model: catalog.BuiltinID, ContextTokens: 1 << 22})
	if !errors.As(err, &re) || re.HTTPStatus() != 400 {
		t.Fatalf("placement refusal through the follower: %v", err)
	}
	// A worker report is admitted with the connection's identity.
	err = f.Report(context.Background(), event.Source{}, event.RunnerStatusUpdated{Runner: "r-1", Instance: "p-2", Rank: 0, Node: followerNode, Status: event.RunnerLoading})
	if !errors.As(err, &re) || re.HTTPStatus() != 409 {
		t.Fatalf("a report about a rank the follower does not hold must be refused, got %v", err)
	}

	// Cut the network: the follower reconnects and keeps up.
	c.cutConnections()
	place(t, c.m.Execute, "p-5")
	final := converge(t, c, f)
	// The follower's loop hands each event to its subscribers as it applies
	// it, before it answers the State read converge made: what the local
	// subscriber will get is queued already, or its channel is closed (a
	// resync). It saw every event in order, up to the cut or to the end.
	var last ids.Index
	closed := false
	for drained := false; !drained; {
		select {
		case ie, ok := <-sub:
			if !ok {
				closed, drained = true, true
				break
			}
			if last != 0 && ie.Index != last+1 {
				t.Fatalf("local subscriber saw %d after %d", ie.Index, last)
			}
			last = ie.Index
		default:
			drained = true
		}
	}
	if last == 0 {
		t.Fatal("the local subscriber saw nothing")
	}
	if !closed && last != final.LastIndex {
		t.Fatalf("the local subscriber is open but stopped at %d of %d", last, final.LastIndex)
	}
}

// TestSnapshotCatchUp: a follower far behind (more than one subscriber
// queue of events) gets a snapshot, then the live tail.
func TestSnapshotCatchUp(t *testing.T) {
	testkit.NoLeaks(t)
	c := startMaster(t, t.TempDir())
	ctx := context.Background()
	for i := 0; i < 3000; i++ {
		if _, err := c.m.Execute(ctx, event.SetTracingEnabled{ID: ids.CommandID(fmt.Sprintf("t-%d", i)), Enabled: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	f := startFollower(t, c, t.TempDir(), false)
	converge(t, c, f)
	t.Logf("caught up with %d events in %v", 3000, time.Since(start))
	place(t, c.m.Execute, "p-1")
	converge(t, c, f)
}

// TestDivergedFollowerResyncs: a node whose log holds another history of
// the same term and length (another node claimed the term) is not continued
// but sent a snapshot, discards its own tail, and converges.
func TestDivergedFollowerResyncs(t *testing.T) {
	testkit.NoLeaks(t)
	fdir := t.TempDir()
	c := startMaster(t, t.TempDir())
	place(t, c.m.Execute, "p-1")

	// Write a different history straight into the follower's log.
	log, err := eventlog.Open(fdir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	var st state.State
	// The same term and the same length as the master's log (MasterElected,
	// NodeJoined, InstanceCreated): only the master named in it differs, as
	// when two nodes claimed term 1 before they saw each other.
	for i, ev := range []event.Event{event.MasterElected{Node: followerNode, Term: 1}, event.TracingSet{Enabled: true}, event.TracingSet{Enabled: false}} {
		ie := event.IndexedEvent{Term: 1, Index: ids.Index(i + 1), Event: ev}
		if st, err = state.Apply(st, ie); err != nil {
			t.Fatal(err)
		}
		b, _ := event.EncodeIndexed(ie)
		log.Append(uint64(i+1), b)
	}
	log.Close()
	if ms, _ := c.m.State(context.Background()); ms.LastIndex != 3 || ms.Term != 1 {
		t.Fatalf("the test wants the master at term 1 index 3, got %d/%d", ms.Term, ms.LastIndex)
	}
	f := startFollower(t, c, fdir, false)
	got := converge(t, c, f)
	if got.Master != masterNode {
		t.Fatalf("master %s after resync", got.Master)
	}
}

// statusOnly is a refusal that names its status but carries no class, as
// the placement planner's do.
type statusOnly struct{ status int }

func (e statusOnly) Error() string   { return "refused" }
func (e statusOnly) HTTPStatus() int { return e.status }

// TestWireErrorKeepsStatusAndClass: an error forwarded from the master
// reaches the follower's API with the status and class it had on the master.
func TestWireErrorKeepsStatusAndClass(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		class  infer.Class
	}{
		{statusOnly{409}, 409, infer.ClassConflict},
		{statusOnly{503}, 503, infer.ClassUnavailable},
		{statusOnly{422}, 422, infer.ClassInvalid},
		{infer.Errorf(infer.ClassNotFound, "no such model"), 404, infer.ClassNotFound},
		{errors.New("boom"), 500, infer.ClassInternal},
	} {
		got := fromWire(toWire(tc.err))
		var re *RemoteError
		if !errors.As(got, &re) || re.HTTPStatus() != tc.status || infer.ClassOf(got) != tc.class || re.Error() != tc.err.Error() {
			t.Errorf("%v: got %+v (class %s), want %d %s", tc.err, re, infer.ClassOf(got), tc.status, tc.class)
		}
	}
}

// TestFollowerStoresTerms: a follower stores the term of what it takes
// from the master, from a snapshot and from events, so that it never
// elects itself in a term it has seen, whatever happens to its log.
func TestFollowerStoresTerms(t *testing.T) {
	testkit.NoLeaks(t)
	c := startMaster(t, t.TempDir())
	place(t, c.m.Execute, "p-1")
	terms, err := eventlog.OpenTermStore(filepath.Join(t.TempDir(), "term"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := startFollower(t, c, t.TempDir(), true, terms)
	st := converge(t, c, f)
	if st.Term == 0 || terms.Current() != uint64(st.Term) {
		t.Fatalf("stored term %d, the master's %d", terms.Current(), st.Term)
	}
}
