//go:build linux

package node_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsFollowerCutOff is the finding that moved the control plane onto
// Raft, on three real hosts: a follower cut off alone refuses a placement
// (503 no_quorum, within 5 s) instead of electing itself; the majority
// places a model meanwhile; after the heal the majority's placement is on
// every node and the refused one on none. Then the leader is killed and a
// survivor places within 5 s.
func TestNetnsFollowerCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 3, Partitions: true})
	boot := []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"}
	var nodes []*netNode
	for _, h := range c.Hosts() {
		nodes = append(nodes, startNet(t, c, h, boot))
	}
	master, _ := netConverge(t, nodes, 3, 60*time.Second)
	_, followers := byID(nodes, master)
	lone := followers[0]
	var rest []*netns.Host
	for _, n := range nodes {
		if n != lone {
			rest = append(rest, n.host)
		}
	}
	c.PartitionGroups([]*netns.Host{lone.host}, rest)
	time.Sleep(3 * time.Second) // long enough to elect itself, were it allowed to
	begin := time.Now()
	code, b := lone.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	refusedIn := time.Since(begin)
	if code != 503 || !strings.Contains(string(b), `"code":"no_quorum"`) || refusedIn > 5*time.Second {
		t.Fatalf("the cut-off follower answered %d %s after %v, want 503 no_quorum within 5 s", code, b, refusedIn)
	}
	t.Logf("the cut-off follower refused in %v: %.200s", refusedIn, b)
	majority := nodes[0]
	if majority == lone {
		majority = nodes[1]
	}
	code, b = majority.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	if code != 200 {
		t.Fatalf("the majority could not place: %d %s", code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)
	c.HealAll()
	netConverge(t, nodes, 3, 60*time.Second)
	for _, n := range nodes {
		s, _ := n.state()
		if _, ok := s.Instances[placed.InstanceID]; !ok || len(s.Instances) != 1 {
			t.Fatalf("%s after the heal: %+v, want exactly the majority's placement %s", n.host.Name(), s.Instances, placed.InstanceID)
		}
	}

	// The leader killed: a survivor places within 5 s.
	master, _ = netConverge(t, nodes, 3, 60*time.Second)
	old, survivors := byID(nodes, master)
	killed := time.Now()
	old.proc.Kill()
	for {
		code, b := survivors[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
		if code == 200 {
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no placement within 30 s of the leader's kill: %d %s", code, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(killed)
	t.Logf("leader killed: a placement committed %v later", took)
	if took > 5*time.Second {
		t.Errorf("a placement took %v after the leader's kill, want within 5 s", took)
	}
}

// TestNetnsTwoVotersRecover: of two nodes, one is killed. The survivor
// serves the instance it holds but refuses placements (no_quorum); `POST
// /v1/cluster/recover` (skulk cluster recover) makes it the only voter and
// it places again. Recovery is refused while the cluster can decide.
func TestNetnsTwoVotersRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace cluster test")
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	a := startNet(t, c, c.Host(1), []string{"--no-mdns"})
	b := startNet(t, c, c.Host(2), []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"})
	nodes := []*netNode{a, b}
	netConverge(t, nodes, 2, 60*time.Second)
	if code, body := a.do("POST", "/v1/cluster/recover", nil); code != 409 || !strings.Contains(string(body), "quorum_reachable") {
		t.Fatalf("recover while both voters are up: %d %s", code, body)
	}
	code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "excluded_nodes": []string{b.id()}})
	if code != 200 {
		t.Fatalf("place: %d %s", code, body)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(body, &placed)
	waitInstanceReady(t, a, placed.InstanceID, 60*time.Second)

	b.proc.Kill()
	// The survivor serves what it holds...
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if code, out := a.chat(); code == 200 && strings.Contains(out, "Lily") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the survivor stopped serving its instance: %d %s", code, out)
		}
	}
	// ...but decides nothing alone.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
		if code == 503 && strings.Contains(string(body), `"code":"no_quorum"`) {
			if !strings.Contains(string(body), "1 of 2 voters") {
				t.Errorf("the refusal does not count the voters: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lone voter of two: %d %s, want 503 no_quorum", code, body)
		}
	}
	if code, body := a.do("POST", "/v1/cluster/recover", nil); code != 200 {
		t.Fatalf("recover: %d %s", code, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after recover: %d %s", code, body)
		}
	}
	s, _ := a.state()
	if _, ok := s.Instances[placed.InstanceID]; !ok {
		t.Fatalf("recovery lost the placement made before: %+v", s.Instances)
	}
}
