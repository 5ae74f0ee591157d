//go:build linux

package node_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// netNode is a `skulk run` process on a netns host, reached through the
// harness's client host (which is never partitioned).
type netNode struct {
	t    *testing.T
	c    *netns.Cluster
	host *netns.Host
	proc *netns.Proc
	home string
	args []string
	env  []string
	key  string // the API key its requests carry
}

// netAdminKey is the admin API key of the netns tests' clusters: their
// clients reach the nodes from the harness's client host, which is not
// loopback, so the API asks for a key.
const netAdminKey = "netns-admin-key-0123456789"

// startNet starts a node. Unless env names them, the node gets the cluster
// key (shared by every node of the test's cluster, as SKULK_CLUSTER_KEY on
// every machine would be) and the admin API key.
func startNet(t *testing.T, c *netns.Cluster, h *netns.Host, extra []string, env ...string) *netNode {
	t.Helper()
	home := t.TempDir()
	args := append([]string{skulkBin, "run", "--home", home, "--threads", "1"}, extra...)
	if !hasEnv(env, "SKULK_CLUSTER_KEY") && !slices.Contains(extra, "--join") {
		env = append(env, "SKULK_CLUSTER_KEY="+netClusterKey(c))
	}
	if !hasEnv(env, "SKULK_API_KEY") {
		env = append(env, "SKULK_API_KEY="+netAdminKey)
	}
	n := &netNode{t: t, c: c, host: h, home: home, args: args, env: env, key: netAdminKey}
	n.start()
	// Stopped before its home is removed (cleanups run last first): a
	// node still writing there fails the removal.
	t.Cleanup(func() { n.proc.Kill() })
	return n
}

// netClusterKey is the cluster key of one netns cluster: a secret of the
// test, derived from nothing public.
var netClusterKeys sync.Map // *netns.Cluster -> string

func netClusterKey(c *netns.Cluster) string {
	k, _ := netClusterKeys.LoadOrStore(c, rand.Text())
	return k.(string)
}

func (n *netNode) start() {
	n.t.Helper()
	n.proc = n.host.Start("skulk", n.args, n.env)
	if _, err := n.proc.WaitLog(`msg=serving`, 60*time.Second); err != nil {
		n.t.Fatalf("%s: %v", n.host.Name(), err)
	}
}

func (n *netNode) id() string { return nodeID(n.home) }

func (n *netNode) url(path string) string { return "http://" + n.host.Addr() + ":52415" + path }

// do sends a request from the client host with the node's key (none when
// key is empty).
func (n *netNode) do(method, path string, body any) (int, []byte) {
	n.t.Helper()
	return n.doKey(n.key, method, path, body)
}

func (n *netNode) doKey(key, method, path string, body any) (int, []byte) {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, n.url(path), rd)
	if err != nil {
		n.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := n.c.Client().HTTPClient().Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (n *netNode) diag() (diag, bool) {
	code, b := n.do("GET", "/v1/diagnostics/cluster", nil)
	var d diag
	return d, code == 200 && json.Unmarshal(b, &d) == nil
}

func (n *netNode) state() (stateDoc, bool) {
	code, b := n.do("GET", "/state", nil)
	var s stateDoc
	return s, code == 200 && json.Unmarshal(b, &s) == nil
}

// netConverge waits until every node names the same master, holds a State
// with the same hash, and knows want members.
func netConverge(t *testing.T, nodes []*netNode, want int, timeout time.Duration) (master string, hash string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		masters, hashes := map[string]bool{}, map[string]bool{}
		ok := true
		for _, n := range nodes {
			d, ok1 := n.diag()
			s, ok2 := n.state()
			reachable := 0
			for _, nd := range d.Nodes {
				if nd.Reachable {
					reachable++
				}
			}
			// Every member replicates the log and the voters are settled:
			// a node killed next must not be one of too few voters.
			ok = ok && ok1 && ok2 && d.MasterNodeID != "" && reachable == want && len(s.Nodes) == want &&
				len(d.Consensus.Members) >= want && d.voters() >= wantVoters(want)
			masters[d.MasterNodeID] = true
			hashes[s.StateHash] = true
		}
		if ok && len(masters) == 1 && len(hashes) == 1 {
			for m := range masters {
				master = m
			}
			for h := range hashes {
				hash = h
			}
			return
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				d, _ := n.diag()
				t.Logf("%s (%s): %+v", n.host.Name(), n.id(), d)
			}
			t.Fatalf("no convergence within %v: masters %v hashes %v", timeout, masters, hashes)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func byID(nodes []*netNode, id string) (*netNode, []*netNode) {
	var found *netNode
	var rest []*netNode
	for _, n := range nodes {
		if n.id() == id {
			found = n
		} else {
			rest = append(rest, n)
		}
	}
	return found, rest
}

func (n *netNode) chat() (int, string) {
	code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64))
	return code, string(b)
}

// TestNetnsCluster runs the cluster's life on three real network hosts:
// zero-config formation through mDNS, refusal of a node with another key
// and one with another network version, master failover, a partition that
// heals, and a restart of every node at once.
func TestNetnsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 5, Partitions: true})
	// The first node starts a new cluster (no key anywhere: it generates
	// one); the others join with its invite line, which names no peer, so
	// they find it through mDNS.
	first := startNet(t, c, c.Host(1), nil, "SKULK_CLUSTER_KEY=")
	// Its output is no terminal: the invite goes to a private file in its
	// home, and the log names the file, never the key.
	if _, err := first.proc.WaitLog(`cluster-invite.txt`, 10*time.Second); err != nil {
		t.Fatalf("the first node did not say where its invite line is: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(first.home, "cluster-invite.txt")); err != nil || !strings.Contains(string(b), "skulk run --join skulk1:") {
		t.Fatalf("the first node's invite file: %q %v", b, err)
	}
	invite := inviteLine(t, first.home, "--no-peers")
	nodes := []*netNode{first}
	for _, h := range c.Hosts()[1:3] {
		nodes = append(nodes, startNet(t, c, h, []string{"--join", invite}))
	}
	master, _ := netConverge(t, nodes, 3, 60*time.Second)
	t.Logf("3 nodes formed one cluster through an invite and mDNS; master %s", master)
	waitHealth(t, nodes[0], func(h map[string]nodeHealth) bool {
		healthy := 0
		for _, nh := range h {
			if nh.Healthy {
				healthy++
			}
		}
		return healthy == 3 && len(h) == 3
	}, "all three nodes healthy in /state")

	// A node with another cluster key and one of another network version,
	// both told where the cluster is, are refused, visibly on both sides.
	peer := []string{"--bootstrap-peers", c.Host(1).Addr() + ":52416"}
	wrongKey := startNet(t, c, c.Host(4), peer, "SKULK_CLUSTER_KEY=some-other-cluster")
	wrongNet := startNet(t, c, c.Host(5), append(peer, "--join", invite), "SKULK_NETWORK_VERSION=skulk-net-0")
	for _, n := range []*netNode{wrongKey, wrongNet} {
		if _, err := n.proc.WaitLog(`could not be decrypted: different cluster key or network version`, 60*time.Second); err != nil {
			t.Fatalf("%s never logged the refusal: %v", n.host.Name(), err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, _ := nodes[0].diag()
		addrs := map[string]bool{}
		for _, r := range d.Refused {
			addrs[strings.Split(r.Addr, ":")[0]] = true
		}
		if addrs[wrongKey.host.Addr()] && addrs[wrongNet.host.Addr()] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("diagnostics never listed both refused nodes: %+v", d.Refused)
		}
		time.Sleep(500 * time.Millisecond)
	}
	netConverge(t, nodes, 3, 10*time.Second) // nothing half-joined
	wrongKey.proc.Stop()
	wrongNet.proc.Stop()

	// An instance on a follower (the master excluded), served from every node.
	code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "excluded_nodes": []string{master}})
	if code != 200 {
		t.Fatalf("place: %d %s", code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)
	waitReady := func(n *netNode, inst string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if s, ok := n.state(); ok && s.Instances[inst].Status == "ready" {
				return
			}
			if time.Now().After(deadline) {
				s, _ := n.state()
				t.Fatalf("instance %s not ready on %s: %+v", inst, n.host.Name(), s.Instances)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(nodes[0], placed.InstanceID)
	for _, n := range nodes {
		if code, b := n.chat(); code != 200 || !strings.Contains(b, "Lily") {
			t.Fatalf("chat via %s: %d %s", n.host.Name(), code, b)
		}
	}

	// Kill the master: a survivor becomes master and accepts commands
	// within 5 s; no replicated event is lost; the instance keeps serving.
	old, survivors := byID(nodes, master)
	s0, _ := survivors[0].state()
	replicated := s0.lastIndex()
	killed := time.Now()
	old.proc.Kill()
	var failover time.Duration
	for {
		if code, _ := survivors[0].do("POST", "/tracing", map[string]bool{"enabled": true}); code == 200 {
			if d, _ := survivors[0].diag(); d.MasterNodeID != master {
				failover = time.Since(killed)
				break
			}
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatal("no new master accepted a command within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("failover: a new master accepted a command %v after the master was killed", failover)
	if failover > 5*time.Second {
		t.Errorf("failover took %v, want under 5 s", failover)
	}
	// Until the master declares it gone, the dead node shows unreachable.
	waitHealth(t, survivors[0], func(h map[string]nodeHealth) bool {
		return len(h[master].Reasons) == 1 && h[master].Reasons[0] == "unreachable"
	}, "the killed master shown unreachable in /state")
	master2, _ := netConverge(t, survivors, 2, 30*time.Second)
	if s, _ := survivors[0].state(); s.lastIndex() < replicated {
		t.Fatalf("the new master's log ends at %d, before %d which was replicated", s.lastIndex(), replicated)
	}
	for _, n := range survivors {
		if code, b := n.chat(); code != 200 || !strings.Contains(b, "Lily") {
			t.Fatalf("the instance stopped serving after failover (via %s): %d %s", n.host.Name(), code, b)
		}
	}
	old.start() // the old master comes back as a follower
	netConverge(t, nodes, 3, 60*time.Second)

	// Partition the master away from the two followers, act on both sides,
	// heal: one master remains and every node converges.
	m2, followers := byID(nodes, master2)
	c.PartitionGroups([]*netns.Host{m2.host}, []*netns.Host{followers[0].host, followers[1].host})
	deadline = time.Now().Add(30 * time.Second)
	var master3 string
	for {
		d, _ := followers[0].diag()
		if d.MasterNodeID != "" && d.MasterNodeID != master2 {
			if code, _ := followers[0].do("POST", "/tracing", map[string]bool{"enabled": false}); code == 200 {
				master3 = d.MasterNodeID
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the majority side elected no master: %+v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The old master, alone on its side, refuses every change within 5 s
	// (503 no_quorum): nothing it is asked there can undo the majority's
	// decisions at the heal.
	for i := 0; i < 3; i++ {
		begin := time.Now()
		code, b := m2.do("POST", "/tracing", map[string]bool{"enabled": true})
		if code != 503 || !strings.Contains(string(b), `"code":"no_quorum"`) || time.Since(begin) > 5*time.Second {
			t.Fatalf("minority command after %v: %d %s, want 503 no_quorum within 5 s", time.Since(begin), code, b)
		}
	}
	c.HealAll()
	final, _ := netConverge(t, nodes, 3, 60*time.Second)
	t.Logf("majority master %s, final master %s", master3, final)
	for _, n := range nodes {
		if s, ok := n.state(); !ok || s.Tracing {
			t.Errorf("%s: tracing %v after the heal, want the majority's decision (off)", n.host.Name(), s.Tracing)
		}
	}

	// Restart every node at once: the cluster re-forms and the instance is back.
	for _, n := range nodes {
		n.proc.Stop()
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.start() }()
	}
	wg.Wait()
	netConverge(t, nodes, 3, 60*time.Second)
	s, _ := nodes[0].state()
	ready := 0
	for id := range s.Instances {
		waitReady(nodes[0], id)
		ready++
	}
	if ready == 0 {
		t.Fatal("no instance came back after the whole-cluster restart")
	}
	// The State may still name a runner of the previous processes as
	// ready until its node's worker reports it gone: a 503 that says to
	// retry is the truth meanwhile.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		code, b := nodes[2].chat()
		if code == 200 && strings.Contains(b, "Lily") {
			break
		}
		if code != 503 || time.Now().After(deadline) {
			t.Fatalf("chat after the whole-cluster restart: %d %s", code, b)
		}
	}
}

// TestNetnsRoutedBootstrap forms a 5-node cluster over two routed subnets
// that multicast does not cross, through bootstrap peers.
func TestNetnsRoutedBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 5, Subnets: 2})
	hosts := c.Hosts()
	peers := hosts[0].Addr() + ":52416," + hosts[len(hosts)-1].Addr() + ":52416"
	var nodes []*netNode
	for _, h := range hosts {
		nodes = append(nodes, startNet(t, c, h, []string{"--no-mdns", "--bootstrap-peers", peers}))
	}
	master, hash := netConverge(t, nodes, 5, 60*time.Second)
	subnets := map[int]bool{}
	for _, h := range hosts {
		subnets[h.Subnet()] = true
	}
	t.Logf("5 nodes on %d subnets formed one cluster: master %s, state hash %s", len(subnets), master, hash)

	// Node loss: an instance on a follower whose node dies is torn down and
	// placed again elsewhere, still honouring its stamped exclusion.
	code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "excluded_nodes": []string{master}})
	if code != 200 {
		t.Fatalf("place: %d %s", code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)
	var holder string
	deadline := time.Now().Add(60 * time.Second)
	for holder == "" {
		code, b := nodes[0].do("GET", "/state", nil)
		var doc struct {
			Instances map[string]struct {
				Status    string `json:"status"`
				Placement []struct {
					Node string `json:"node"`
				} `json:"placement"`
			} `json:"instances"`
		}
		if code == 200 && json.Unmarshal(b, &doc) == nil && doc.Instances[placed.InstanceID].Status == "ready" {
			holder = doc.Instances[placed.InstanceID].Placement[0].Node
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance never became ready: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dead, alive := byID(nodes, holder)
	dead.proc.Kill()
	lost := time.Now()
	for {
		code, b := alive[0].do("GET", "/state", nil)
		var doc struct {
			Instances map[string]struct {
				Model     string `json:"model"`
				Status    string `json:"status"`
				Placement []struct {
					Node string `json:"node"`
				} `json:"placement"`
				ExcludedNodes []string `json:"excluded_nodes"`
			} `json:"instances"`
		}
		if code == 200 && json.Unmarshal(b, &doc) == nil {
			for id, in := range doc.Instances {
				if id != placed.InstanceID && in.Model == "stories260k" && in.Status == "ready" {
					if in.Placement[0].Node == master || in.Placement[0].Node == holder {
						t.Fatalf("re-placed on %s, which is excluded or gone", in.Placement[0].Node)
					}
					t.Logf("instance on the lost node %s re-placed as %s on %s %v after the kill", holder[:8], id[:8], in.Placement[0].Node[:8], time.Since(lost))
					if code, b := alive[0].chat(); code != 200 || !strings.Contains(b, "Lily") {
						t.Fatalf("chat after re-placement: %d %s", code, b)
					}
					return
				}
			}
		}
		if time.Since(lost) > 60*time.Second {
			t.Fatalf("the instance of the lost node was not re-placed within 60 s: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestNetnsCatchUp: a node joining a cluster whose log holds 10,000 events
// serves within 10 s, and the master's command latency stays low meanwhile.
func TestNetnsCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace catch-up test")
	}
	c := netns.New(t, netns.Options{Hosts: 3})
	a := startNet(t, c, c.Host(1), []string{"--no-mdns"})
	b := startNet(t, c, c.Host(2), []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"})
	netConverge(t, []*netNode{a, b}, 2, 60*time.Second)
	code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	if code != 200 {
		t.Fatalf("place: %d %s", code, body)
	}
	// Fill the log: 10,000 events, 8 clients at a time.
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1250; i++ {
				if code, b := a.do("POST", "/tracing", map[string]bool{"enabled": i%2 == 0}); code != 200 {
					t.Errorf("tracing: %d %s", code, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	s, _ := a.state()
	t.Logf("log holds %d events (%v to write them)", s.lastIndex(), time.Since(start))
	if s.lastIndex() < 10000 {
		t.Fatalf("only %d events", s.lastIndex())
	}

	// Measure the master's command latency from before the third node
	// starts until it has caught up and served, sampling every 5 ms.
	stop := make(chan struct{})
	probed := make(chan []time.Duration)
	go func() {
		var lat []time.Duration
		for {
			select {
			case <-stop:
				probed <- lat
				return
			default:
			}
			t0 := time.Now()
			if code, _ := a.do("POST", "/tracing", map[string]bool{"enabled": true}); code == 200 {
				lat = append(lat, time.Since(t0))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	joined := time.Now()
	n3 := startNet(t, c, c.Host(3), []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"})
	var caughtUp, served time.Duration
	for caughtUp == 0 || served == 0 {
		if caughtUp == 0 {
			// The replica holds the whole 10,000-event log (the probes
			// keep adding to it).
			if sn, ok := n3.state(); ok && sn.lastIndex() >= s.lastIndex() {
				caughtUp = time.Since(joined)
			}
		}
		if served == 0 {
			if code, b := n3.chat(); code == 200 && strings.Contains(b, "Lily") {
				served = time.Since(joined)
			}
		}
		if time.Since(joined) > 60*time.Second {
			t.Fatalf("the joining node did not catch up and serve within 60 s (caught up %v, served %v)", caughtUp, served)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // keep measuring just past the catch-up
	close(stop)
	lat := <-probed
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) < 50 {
		t.Fatalf("only %d latency samples", len(lat))
	}
	p99 := lat[len(lat)*99/100]
	t.Logf("joining node (process start included): caught up with the %d-event log in %v, served a chat in %v; master command latency meanwhile: p50 %v p99 %v max %v over %d commands",
		s.lastIndex(), caughtUp, served, lat[len(lat)/2], p99, lat[len(lat)-1], len(lat))
	if served > 10*time.Second || caughtUp > 10*time.Second {
		t.Errorf("the joining node took %v to catch up and %v to serve, want under 10 s", caughtUp, served)
	}
	// A master that blocked while it streamed the log would answer the
	// (sequential) probe waiting then only at the end: one sample as long
	// as the transfer (about half a second here). 200 ms stays under that
	// and above the scheduler's spikes on a loaded 2-core machine (99 ms
	// seen), which 50 ms did not.
	if p99 > 200*time.Millisecond {
		t.Errorf("command latency p99 %v during catch-up, want under 200 ms", p99)
	}
	netConverge(t, []*netNode{a, b, n3}, 3, 30*time.Second)
}

func (s stateDoc) lastIndex() uint64 { return s.LastApplied }

var _ = fmt.Sprintf

type nodeHealth struct {
	Healthy bool     `json:"healthy"`
	Reasons []string `json:"reasons"`
}

// waitHealth polls GET /state until its nodeHealth overlay satisfies ok.
func waitHealth(t *testing.T, n *netNode, ok func(map[string]nodeHealth) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := n.do("GET", "/state", nil)
		var doc struct {
			NodeHealth map[string]nodeHealth `json:"nodeHealth"`
		}
		if code == 200 && json.Unmarshal(b, &doc) == nil && ok(doc.NodeHealth) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; last nodeHealth %s", what, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inviteLine runs `skulk cluster invite` on a node's home and returns the
// invite (the argument of --join).
func inviteLine(t *testing.T, home string, args ...string) string {
	t.Helper()
	out, err := exec.Command(skulkBin, append([]string{"cluster", "invite", "--home", home}, args...)...).Output()
	if err != nil {
		t.Fatalf("skulk cluster invite: %v", err)
	}
	line := strings.TrimSpace(string(out))
	inv, ok := strings.CutPrefix(line, "skulk run --join ")
	if !ok || !strings.HasPrefix(inv, "skulk1:") {
		t.Fatalf("skulk cluster invite printed %q", line)
	}
	return inv
}
