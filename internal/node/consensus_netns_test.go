//go:build linux

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsConsensusPartitions is a Jepsen-style check of the control
// plane: while a nemesis cuts links at random (a majority from a minority,
// the leader alone, one direction only), kills nodes and restarts them,
// clients place and delete instances through random nodes and record every
// answer. Healed at the end, every decision the cluster acknowledged is in
// every node's State, nothing a client was refused is there, every node
// holds the same State, and no term had two leaders. Each placement is
// tagged by a unique excluded-node name, so the State says which request
// it came from. A cluster run with the commit rule broken on purpose
// (acknowledge before commit) must fail the same checks.
func TestNetnsConsensusPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace consensus test")
	}
	run := 60 * time.Second
	if v, err := strconv.Atoi(os.Getenv("SKULK_CONSENSUS_TEST_SECONDS")); err == nil && v > 0 {
		run = time.Duration(v) * time.Second
	}
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d_hosts", n), func(t *testing.T) {
			j := newJepsen(t, n, false)
			j.nemesisAndClients(run)
			j.settle()
			if bad := j.check(); len(bad) > 0 {
				t.Errorf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
			}
		})
	}
	t.Run("broken_commit_rule_is_caught", func(t *testing.T) {
		j := newJepsen(t, 3, true)
		// The leader cut off alone acknowledges what it cannot commit; the
		// majority elects another and the acknowledged placements vanish.
		leader := j.leader()
		rest := slices.DeleteFunc(slices.Clone(j.nodes), func(n *netNode) bool { return n == leader })
		j.c.PartitionGroups([]*netns.Host{leader.host}, []*netns.Host{rest[0].host, rest[1].host})
		for i := 0; i < 3; i++ {
			j.place(leader)
		}
		time.Sleep(3 * time.Second)
		j.place(rest[0])
		j.settle()
		bad := j.check()
		if len(bad) == 0 {
			t.Fatalf("the checker found nothing wrong with a cluster that acknowledges before commit (%s)", j.counts())
		}
		t.Logf("the broken commit rule was caught: %s", bad[0])
	})
}

// outcome of one client request.
type outcome int

const (
	acked outcome = iota
	refused
	unknown
)

type op struct {
	kind     string // place or delete
	tag      string // the placement's tag (place) or the tag of the instance deleted
	instance string
	result   outcome
	detail   string
}

type jepsen struct {
	t     *testing.T
	c     *netns.Cluster
	nodes []*netNode
	rng   *rand.Rand

	mu         sync.Mutex // guards what follows
	ops        []op
	live       map[string]string // acknowledged, not deleted: tag -> instance
	seq        int
	partitions int
	kills      int
	down       map[*netNode]bool
	past       []string // the output of processes killed and restarted
}

func newJepsen(t *testing.T, n int, unsafe bool) *jepsen {
	t.Helper()
	c := netns.New(t, netns.Options{Hosts: n, Partitions: true})
	j := &jepsen{t: t, c: c, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n))), live: map[string]string{}, down: map[*netNode]bool{}}
	var peers []string
	for _, h := range c.Hosts() {
		peers = append(peers, h.Addr()+":52416")
	}
	var env []string
	if unsafe {
		env = append(env, "SKULK_TEST_UNSAFE_ACK=1")
	}
	for _, h := range c.Hosts() {
		j.nodes = append(j.nodes, startNet(t, c, h, []string{"--bootstrap-peers", strings.Join(peers, ","), "--no-mdns"}, env...))
	}
	netConverge(t, j.nodes, n, 90*time.Second)
	return j
}

// leader is the node every node names as master.
func (j *jepsen) leader() *netNode {
	j.t.Helper()
	d, _ := j.nodes[0].diag()
	for _, n := range j.nodes {
		if n.id() == d.MasterNodeID {
			return n
		}
	}
	j.t.Fatalf("no leader named: %+v", d)
	return nil
}

// classify turns an answer into an outcome: 2xx acknowledged; a refusal
// that says nothing changed (no_quorum, a 4xx) refused; anything else
// (commit_unknown, a timeout, a broken connection) unknown.
func classify(code int, body []byte) outcome {
	switch {
	case code >= 200 && code < 300:
		return acked
	case code == 503 && strings.Contains(string(body), `"code":"no_quorum"`):
		return refused
	case code >= 400 && code < 500:
		return refused
	}
	return unknown
}

func (j *jepsen) place(n *netNode) {
	j.mu.Lock()
	j.seq++
	tag := fmt.Sprintf("jepsen-op-%d", j.seq)
	j.mu.Unlock()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "excluded_nodes": []string{tag}})
	o := op{kind: "place", tag: tag, result: classify(code, b), detail: fmt.Sprintf("%s %d %.200s", n.host.Name(), code, b)}
	if o.result == acked {
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		json.Unmarshal(b, &r)
		o.instance = r.InstanceID
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, o)
	if o.result == acked {
		j.live[tag] = o.instance
	}
}

func (j *jepsen) remove(n *netNode) {
	j.mu.Lock()
	var tag, inst string
	for t, i := range j.live {
		tag, inst = t, i
		break
	}
	j.mu.Unlock()
	if tag == "" {
		return
	}
	code, b := n.do("DELETE", "/instance/"+inst, nil)
	o := op{kind: "delete", tag: tag, instance: inst, result: classify(code, b), detail: fmt.Sprintf("%s %d %.200s", n.host.Name(), code, b)}
	if code == 404 {
		// Repaired under another id after a node loss: the tag lives on.
		o.result = refused
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, o)
	if o.result != refused {
		delete(j.live, tag) // deleted, or maybe: the check allows either
	}
}

// nemesisAndClients runs the faults and two clients for d.
func (j *jepsen) nemesisAndClients(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := j.nodes[j.rng.IntN(len(j.nodes))]
				j.mu.Lock()
				live, isDown := len(j.live), j.down[n]
				j.mu.Unlock()
				switch {
				case isDown:
				case live >= 4 || (live > 0 && j.rng.IntN(3) == 0):
					j.remove(n)
				default:
					j.place(n)
				}
				time.Sleep(time.Duration(100+j.rng.IntN(300)) * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			j.fault()
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(3000+j.rng.IntN(3000)) * time.Millisecond):
			}
			j.heal()
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(1000+j.rng.IntN(2000)) * time.Millisecond):
			}
		}
	})
	wg.Wait()
}

// fault picks one fault at random.
func (j *jepsen) fault() {
	hosts := make([]*netns.Host, len(j.nodes))
	for i, n := range j.nodes {
		hosts[i] = n.host
	}
	j.rng.Shuffle(len(hosts), func(a, b int) { hosts[a], hosts[b] = hosts[b], hosts[a] })
	switch j.rng.IntN(4) {
	case 0: // a minority from a majority
		k := (len(hosts) - 1) / 2
		j.c.PartitionGroups(hosts[:k], hosts[k:])
	case 1: // the leader alone
		d, _ := j.nodes[j.rng.IntN(len(j.nodes))].diag()
		for _, n := range j.nodes {
			if n.id() == d.MasterNodeID {
				n.host.Partition()
			}
		}
	case 2: // one direction only
		j.c.CutOneWay(hosts[0], hosts[1])
	case 3: // kill a node; heal restarts it
		n := j.nodes[j.rng.IntN(len(j.nodes))]
		n.proc.Kill()
		j.mu.Lock()
		j.down[n] = true
		j.kills++
		j.mu.Unlock()
		return
	}
	j.mu.Lock()
	j.partitions++
	j.mu.Unlock()
}

func (j *jepsen) heal() {
	j.c.HealAll()
	j.mu.Lock()
	var restart []*netNode
	for n := range j.down {
		restart = append(restart, n)
	}
	clear(j.down)
	j.mu.Unlock()
	for _, n := range restart {
		j.mu.Lock()
		j.past = append(j.past, n.proc.Output())
		j.mu.Unlock()
		n.start()
	}
}

// settle heals everything and waits until every node holds one State.
func (j *jepsen) settle() {
	j.heal()
	netConverge(j.t, j.nodes, len(j.nodes), 120*time.Second)
	// Once more after any last report: the hashes must hold still.
	time.Sleep(2 * time.Second)
	netConverge(j.t, j.nodes, len(j.nodes), 60*time.Second)
}

func (j *jepsen) counts() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var a, r, u int
	for _, o := range j.ops {
		switch o.result {
		case acked:
			a++
		case refused:
			r++
		default:
			u++
		}
	}
	return fmt.Sprintf("%d requests: %d acknowledged, %d refused, %d unknown; %d partitions, %d kills", len(j.ops), a, r, u, j.partitions, j.kills)
}

var leadingRE = regexp.MustCompile(`msg="leading the cluster" node=(\S+) term=(\d+)`)

// check returns every violation.
func (j *jepsen) check() []string {
	j.t.Helper()
	j.t.Log(j.counts())
	var bad []string
	// The tags the final State holds, on every node alike.
	tags := map[string]bool{}
	hashes := map[string]bool{}
	for _, n := range j.nodes {
		code, b := n.do("GET", "/state", nil)
		var s struct {
			StateHash string `json:"stateHash"`
			Instances map[string]struct {
				Excluded []string `json:"excluded_nodes"`
			} `json:"instances"`
		}
		if code != 200 || json.Unmarshal(b, &s) != nil {
			bad = append(bad, fmt.Sprintf("%s: GET /state %d", n.host.Name(), code))
			continue
		}
		hashes[s.StateHash] = true
		for _, inst := range s.Instances {
			for _, x := range inst.Excluded {
				if strings.HasPrefix(x, "jepsen-op-") {
					tags[x] = true
				}
			}
		}
	}
	if len(hashes) != 1 {
		bad = append(bad, fmt.Sprintf("the nodes hold %d different States", len(hashes)))
	}
	j.mu.Lock()
	ops := slices.Clone(j.ops)
	j.mu.Unlock()
	deleted := map[string]outcome{}
	for _, o := range ops {
		if o.kind == "delete" {
			if prev, ok := deleted[o.tag]; !ok || o.result < prev {
				deleted[o.tag] = o.result
			}
		}
	}
	for _, o := range ops {
		if o.kind != "place" {
			continue
		}
		d, wasDeleted := deleted[o.tag]
		switch {
		case o.result == acked && !wasDeleted && !tags[o.tag]:
			bad = append(bad, fmt.Sprintf("acknowledged placement %s (%s) is in no State: %s", o.tag, o.instance, o.detail))
		case o.result == acked && wasDeleted && d == acked && tags[o.tag]:
			bad = append(bad, fmt.Sprintf("placement %s survived an acknowledged delete", o.tag))
		case o.result == refused && tags[o.tag]:
			bad = append(bad, fmt.Sprintf("refused placement %s is in the State: %s", o.tag, o.detail))
		}
	}
	// No term had two leaders.
	leaders := map[string]map[string]bool{}
	j.mu.Lock()
	outputs := slices.Clone(j.past)
	j.mu.Unlock()
	for _, n := range j.nodes {
		outputs = append(outputs, n.proc.Output())
	}
	for _, out := range outputs {
		for _, m := range leadingRE.FindAllStringSubmatch(out, -1) {
			if leaders[m[2]] == nil {
				leaders[m[2]] = map[string]bool{}
			}
			leaders[m[2]][m[1]] = true
		}
	}
	for term, who := range leaders {
		if len(who) > 1 {
			bad = append(bad, fmt.Sprintf("term %s had %d leaders", term, len(who)))
		}
	}
	j.t.Logf("%d terms led, one leader each unless listed above", len(leaders))
	return bad
}
