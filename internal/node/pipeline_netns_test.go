//go:build linux

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// stream sends a streamed chat completion from the client host.
func (n *netNode) stream(ctx context.Context, body map[string]any, onChunk func(int, string)) (sseResult, error) {
	return streamChat(ctx, n.c.Client().HTTPClient(), n.url("/v1/chat/completions"), n.key, body, onChunk)
}

// content posts a chat completion and returns its text and finish reason.
func (n *netNode) content(body map[string]any) (string, string, error) {
	code, b := n.do("POST", "/v1/chat/completions", body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); code != 200 || err != nil || len(resp.Choices) != 1 {
		return "", "", fmt.Errorf("%d %s", code, b)
	}
	return resp.Choices[0].Message.Content, resp.Choices[0].FinishReason, nil
}

// placement is an instance as GET /state shows it.
type placedInstance struct {
	Model     string `json:"model"`
	Status    string `json:"status"`
	Placement []struct {
		Node  string `json:"node"`
		Start int    `json:"layer_start"`
		End   int    `json:"layer_end"`
	} `json:"placement"`
}

func (n *netNode) instances() map[string]placedInstance {
	code, b := n.do("GET", "/state", nil)
	var doc struct {
		Instances map[string]placedInstance `json:"instances"`
	}
	if code != 200 || json.Unmarshal(b, &doc) != nil {
		return nil
	}
	return doc.Instances
}

// placeSplit places stories260k with the body's options through n and waits
// until it is ready; it returns the instance and the node of each rank.
func placeSplit(t *testing.T, n *netNode, body map[string]any) (string, []string) {
	t.Helper()
	body["model_id"] = "stories260k"
	// A 503 says to retry (a member's readings still pending after a
	// heal, an election): the test does, as a client would.
	code, b := n.do("POST", "/place_instance", body)
	for deadline := time.Now().Add(30 * time.Second); code == 503 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		code, b = n.do("POST", "/place_instance", body)
	}
	if code != 200 {
		t.Fatalf("place %v: %d %s", body, code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)
	return placed.InstanceID, waitInstanceReady(t, n, placed.InstanceID, 60*time.Second)
}

func waitInstanceReady(t *testing.T, n *netNode, inst string, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if in, ok := n.instances()[inst]; ok && in.Status == "ready" {
			var nodes []string
			for _, p := range in.Placement {
				nodes = append(nodes, p.Node)
			}
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never became ready: %+v", inst, n.instances())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runnerPid asks n's node diagnostics for the pid of its runner of inst.
func runnerPid(t *testing.T, n *netNode, inst string) int {
	t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/node", nil)
	var doc struct {
		Runners []struct {
			Instance string `json:"instance"`
			Pid      int    `json:"pid"`
		} `json:"runners"`
	}
	if code != 200 || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("node diagnostics of %s: %d %s", n.host.Name(), code, b)
	}
	for _, r := range doc.Runners {
		if r.Instance == inst && r.Pid > 0 {
			return r.Pid
		}
	}
	t.Fatalf("%s runs no runner of %s: %s", n.host.Name(), inst, b)
	return 0
}

// runnersOf counts n's runners of inst in its node diagnostics.
func runnersOf(t *testing.T, n *netNode, inst string) int {
	t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/node", nil)
	var doc struct {
		Runners []struct {
			Instance string `json:"instance"`
		} `json:"runners"`
	}
	if code != 200 || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("node diagnostics of %s: %d %s", n.host.Name(), code, b)
	}
	count := 0
	for _, r := range doc.Runners {
		if r.Instance == inst {
			count++
		}
	}
	return count
}

// checkSplitChat: greedy chat, a streamed chat and a stop sequence through
// api give the single-node text.
func checkSplitChat(t *testing.T, api *netNode, what string) {
	t.Helper()
	start := time.Now()
	if got, _, err := api.content(storyRequest(false, 64)); err != nil || got != llamaCppStory {
		t.Fatalf("%s: chat: %q %v", what, got, err)
	}
	plain := time.Since(start)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start = time.Now()
	res, err := api.stream(ctx, storyRequest(true, 64), nil)
	if err != nil || res.content != llamaCppStory || res.errMsg != "" || !res.done {
		t.Fatalf("%s: streamed chat: %+v %v", what, res, err)
	}
	streamed := time.Since(start)
	// A stop sequence cuts the text where one node cuts it: before the
	// first "Lily", finish reason "stop".
	want := llamaCppStory[:strings.Index(llamaCppStory, "Lily")]
	req := storyRequest(false, 64)
	req["stop"] = []string{"Lily"}
	if got, finish, err := api.content(req); err != nil || got != want || finish != "stop" {
		t.Fatalf("%s: chat with a stop sequence: %q (%s) %v, want %q", what, got, finish, err, want)
	}
	req = storyRequest(true, 64)
	req["stop"] = []string{"Lily"}
	if res, err := api.stream(ctx, req, nil); err != nil || res.content != want || res.finish != "stop" || res.errMsg != "" {
		t.Fatalf("%s: streamed chat with a stop sequence: %+v %v, want %q", what, res, err, want)
	}
	t.Logf("%s: 64 greedy tokens in %v (streamed %v); stop sequence honoured", what, plain, streamed)
}

// failMidStream starts a long streamed request through api, calls fault
// after the second chunk, and checks that the stream ends with an error
// event within 5 s of it.
func failMidStream(t *testing.T, api *netNode, what string, fault func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var at time.Time
	res, err := api.stream(ctx, storyRequest(true, 100000), func(i int, _ string) {
		if i == 2 {
			fault()
			at = time.Now()
		}
	})
	ended := time.Since(at)
	if at.IsZero() {
		t.Fatalf("%s: the stream ended before the fault: %+v %v", what, res, err)
	}
	if err == nil && res.errMsg == "" {
		for _, n := range dumpNodes {
			for _, line := range strings.Split(n.proc.Output(), "\n") {
				if strings.Contains(line, "edge") || strings.Contains(line, "link") || strings.Contains(line, "pipeline") {
					t.Logf("%s: %s", n.host.Name(), line)
				}
			}
		}
		t.Fatalf("%s: the stream ended %v after the fault without an error event: %+v", what, ended, res)
	}
	t.Logf("%s: the stream ended %v after the fault: %q %v", what, ended, res.errMsg, err)
	if ended > 5*time.Second {
		t.Errorf("%s: the stream ended %v after the fault, want within 5 s", what, ended)
	}
}

// chatEventually retries a greedy chat through api until it gives the
// single-node text.
func chatEventually(t *testing.T, api *netNode, what string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, _, err := api.content(storyRequest(false, 64))
		if err == nil && got == llamaCppStory {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			for _, n := range dumpNodes {
				for _, line := range strings.Split(n.proc.Output(), "\n") {
					if strings.Contains(line, "place") || strings.Contains(line, "lost") || strings.Contains(line, "gone") {
						t.Logf("%s: %s", n.host.Name(), line)
					}
				}
			}
			t.Logf("instances: %+v", api.instances())
			t.Fatalf("%s: no good chat within %v: %q %v", what, timeout, got, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var dumpNodes []*netNode

var concurrentPrompts = []string{
	"Once upon a time", "Lily and the dog", "The sun was hot", "Tom had a red ball",
	"One day, a bird", "The little cat", "Mom said no", "In the park",
}

func promptRequest(prompt string, stream bool) map[string]any {
	r := storyRequest(stream, 48)
	r["messages"] = []map[string]any{{"role": "user", "content": prompt}}
	return r
}

// TestNetnsPipeline: stories260K split over 3 and then 2 network hosts,
// served through a fourth node (the master) that holds no stage: greedy,
// streamed and stopped text equal one node's, and so do the answers with
// logprobs, a JSON schema and a forced tool call; 8 concurrent streams each
// get their text alone; a killed runner, a partitioned stage node (the last
// rank's, and rank 0's, from which the API node streams the answer) and a
// killed stage node end the request in flight with an error within 5 s,
// and the model serves again after.
func TestNetnsPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace pipeline test")
	}
	c := netns.New(t, netns.Options{Hosts: 4, Partitions: true})
	first := startNet(t, c, c.Host(1), []string{"--no-mdns"})
	nodes := []*netNode{first}
	for _, h := range c.Hosts()[1:] {
		nodes = append(nodes, startNet(t, c, h, []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"}))
	}
	master, _ := netConverge(t, nodes, 4, 60*time.Second)
	dumpNodes = nodes
	api, stages := byID(nodes, master)
	of := func(id string) *netNode { n, _ := byID(nodes, id); return n }

	// The model placed whole answers the structured-output, logprobs and
	// stop requests: what each split below must answer too.
	whole, _ := placeSplit(t, api, map[string]any{"min_nodes": 1, "excluded_nodes": []string{master}})
	cases := sameAnswerCases()
	wholeAnswers := make([]string, len(cases))
	for i, c := range cases {
		wholeAnswers[i] = chatAnswer(t, api, c.body)
	}
	if code, b := api.do("DELETE", "/instance/"+whole, nil); code != 200 {
		t.Fatalf("delete %s: %d %s", whole, code, b)
	}
	sameAnswers := func(what string) {
		t.Helper()
		for i, c := range cases {
			if got := chatAnswer(t, api, c.body); got != wholeAnswers[i] {
				t.Fatalf("%s: %s:\n split %s\n whole %s", what, c.name, got, wholeAnswers[i])
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for api.instances()[whole].Model != "" {
		if time.Now().After(deadline) {
			t.Fatalf("the whole instance %s is still there 30 s after its deletion", whole)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Three stages on the three followers.
	start := time.Now()
	inst, ranks := placeSplit(t, api, map[string]any{"min_nodes": 3, "excluded_nodes": []string{master}})
	t.Logf("3-stage instance ready %v after placement", time.Since(start))
	if len(ranks) != 3 {
		t.Fatalf("%d ranks, want 3", len(ranks))
	}
	for _, r := range ranks {
		if r == master {
			t.Fatalf("a rank on the excluded API node: %v", ranks)
		}
	}
	checkSplitChat(t, api, "3 stages")
	sameAnswers("3 stages")

	// 8 concurrent streams each get the text they get alone.
	alone := make([]string, len(concurrentPrompts))
	for i, p := range concurrentPrompts {
		got, _, err := api.content(promptRequest(p, false))
		if err != nil || got == "" {
			t.Fatalf("prompt %q alone: %q %v", p, got, err)
		}
		alone[i] = got
	}
	var wg sync.WaitGroup
	together := make([]sseResult, len(concurrentPrompts))
	errs := make([]error, len(concurrentPrompts))
	start = time.Now()
	for i, p := range concurrentPrompts {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			together[i], errs[i] = api.stream(ctx, promptRequest(p, true), nil)
		})
	}
	wg.Wait()
	t.Logf("8 concurrent streams of 48 tokens on 3 stages in %v", time.Since(start))
	for i := range concurrentPrompts {
		if errs[i] != nil || together[i].errMsg != "" || together[i].content != alone[i] {
			t.Errorf("prompt %q concurrently: %+v %v, alone %q", concurrentPrompts[i], together[i], errs[i], alone[i])
		}
	}

	// SIGKILL the last rank's runner mid-generation: its node stays, the
	// runners restart.
	last := of(ranks[2])
	pid := runnerPid(t, last, inst)
	failMidStream(t, api, "runner of rank 2 killed", func() { syscall.Kill(pid, syscall.SIGKILL) })
	waitInstanceReady(t, api, inst, 60*time.Second)
	t.Logf("after the runner's kill: served again in %v", chatEventually(t, api, "after the runner's kill", 60*time.Second))

	// Cut the last rank's node off from the others mid-generation (the
	// client still reaches every node).
	failMidStream(t, api, "rank 2's node partitioned", func() { last.host.Partition() })
	last.host.Heal()
	netConverge(t, nodes, 4, 60*time.Second)
	// When the partition outlasts NodeLoss's 3 s, the master tears the
	// instance down (its ranks' runners, failing to link, may have tripped
	// the crash breaker meanwhile) and places it again on the survivors;
	// otherwise its runners restart. Either way the model serves again.
	deadline = time.Now().Add(60 * time.Second)
	for len(api.instances()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no instance of the model 60 s after the partition healed: the split instance was not re-placed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("after the partition healed: served again in %v", chatEventually(t, api, "after the partition", 60*time.Second))

	// Cut rank 0's node off mid-generation: the API node, which streams
	// the answer from it, must not wait for the data stream's own timeout
	// (its QUIC pings take tens of seconds): the stream closes when the
	// membership declares the node gone. The instance is placed again on
	// the survivors.
	// (The instance placed again after the partition may be whole: place
	// a fresh split.)
	for id := range api.instances() {
		if code, b := api.do("DELETE", "/instance/"+id, nil); code != 200 {
			t.Fatalf("delete %s: %d %s", id, code, b)
		}
	}
	inst, ranks = placeSplit(t, api, map[string]any{"min_nodes": 2, "excluded_nodes": []string{master}})
	head := of(ranks[0])
	failMidStream(t, api, "rank 0's node partitioned", func() { head.host.Partition() })
	replaced := time.Now()
	for {
		on := false
		found := false
		for _, in := range api.instances() {
			if in.Model == "stories260k" && in.Status == "ready" {
				found = true
				for _, p := range in.Placement {
					on = on || p.Node == head.id()
				}
			}
		}
		if found && !on {
			t.Logf("re-placed on the survivors %v after rank 0's node was cut off", time.Since(replaced))
			break
		}
		if time.Since(replaced) > 60*time.Second {
			t.Fatalf("not re-placed off the partitioned rank-0 node within 60 s: %+v", api.instances())
		}
		time.Sleep(200 * time.Millisecond)
	}
	chatEventually(t, api, "after rank 0's node was cut off", 60*time.Second)
	// Torn down on every node the API reaches: no runner of it is left.
	for _, n := range nodes {
		if n != head && runnersOf(t, n, inst) > 0 {
			t.Errorf("%s still runs a runner of %s", n.host.Name(), inst)
		}
	}
	head.host.Heal()
	netConverge(t, nodes, 4, 60*time.Second)
	for id := range api.instances() {
		if code, b := api.do("DELETE", "/instance/"+id, nil); code != 200 {
			t.Fatalf("delete %s: %d %s", id, code, b)
		}
	}

	// Two stages; kill a stage node mid-generation: the instance is placed
	// again on the survivors and serves.
	inst, ranks = placeSplit(t, api, map[string]any{"min_nodes": 2, "excluded_nodes": []string{master}})
	if len(ranks) != 2 || ranks[0] == master || ranks[1] == master {
		t.Fatalf("2-stage placement %v (API node %s)", ranks, master)
	}
	checkSplitChat(t, api, "2 stages")
	sameAnswers("2 stages")
	dead := of(ranks[1])
	var killed time.Time
	failMidStream(t, api, "rank 1's node killed", func() { killed = time.Now(); dead.proc.Kill() })
	// Until it is placed again, a request answers at once that the node is
	// lost and the instance being placed again, or waits for the new
	// instance (the teardown and the placement again are one entry: no
	// moment has the model without an instance, which a request would
	// place on demand): never a runner's exit status.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		code, b := api.do("POST", "/v1/chat/completions", storyRequest(false, 8))
		if code == 200 {
			break
		}
		if code != 503 {
			t.Fatalf("a request while rank 1's node is lost: %d %s", code, b)
		}
		if strings.Contains(string(b), "instance_lost") {
			if !strings.Contains(string(b), dead.id()) {
				t.Fatalf("the instance_lost answer does not name the lost node: %s", b)
			}
			t.Logf("while lost: %.200s", b)
			break
		}
	}
	for {
		found := ""
		for id, in := range api.instances() {
			if id != inst && in.Model == "stories260k" && in.Status == "ready" {
				for _, p := range in.Placement {
					if p.Node == dead.id() || p.Node == master {
						t.Fatalf("re-placed on %s, which is gone or excluded", p.Node)
					}
				}
				found = id
			}
		}
		if found != "" {
			t.Logf("re-placed as %s (%d ranks) %v after the node's kill", found[:8], len(api.instances()[found].Placement), time.Since(killed))
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("not re-placed within 60 s: %+v", api.instances())
		}
		time.Sleep(200 * time.Millisecond)
	}
	chatEventually(t, api, "after the node's kill", 30*time.Second)
	// Service is back within 5 s of the failure detector declaring the
	// node dead (the API node's timeline has when it did).
	code, b := api.do("GET", "/v1/diagnostics/cluster/timeline", nil)
	var tl timelineDoc
	if code != 200 || json.Unmarshal(b, &tl) != nil {
		t.Fatalf("timeline: %d %s", code, b)
	}
	var declared time.Time
	for _, e := range tl.Events {
		if e.Kind == "MemberFailed" && e.Node == dead.id() {
			declared = e.At
		}
	}
	if declared.IsZero() {
		t.Fatalf("the API node's timeline has no MemberFailed for %s: %+v", dead.id(), tl.Events)
	}
	back := time.Since(declared)
	t.Logf("served again %v after the failure detector declared the node dead (%v after the kill)", back, declared.Sub(killed))
	if back > 5*time.Second {
		t.Errorf("service came back %v after the node was declared dead, want within 5 s", back)
	}
	_ = stages
}

// TestNetnsPipelineBudget: two nodes whose --memory-budget admits half of
// stories260K but not the whole (the planner charges each runner its
// weights × 1.1, its KV and a 512 MiB floor: the budget sits between the
// one-node total and the larger per-rank total of the 2-node preview); a
// plain place splits it and chat gives the single-node text.
func TestNetnsPipelineBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace pipeline test")
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	a := startNet(t, c, c.Host(1), []string{"--no-mdns"})
	b := startNet(t, c, c.Host(2), []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"})
	nodes := []*netNode{a, b}
	netConverge(t, nodes, 2, 60*time.Second)
	code, body := a.do("GET", "/instance/previews?model_id=stories260k", nil)
	var doc struct {
		Previews []struct {
			Width   int `json:"width"`
			PerNode []struct {
				Total int64 `json:"total"`
			} `json:"per_node"`
		} `json:"previews"`
	}
	if code != 200 || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("previews: %d %s", code, body)
	}
	var whole, half int64
	for _, p := range doc.Previews {
		for _, e := range p.PerNode {
			switch p.Width {
			case 1:
				whole = e.Total
			case 2:
				half = max(half, e.Total)
			}
		}
	}
	if whole == 0 || half == 0 || half >= whole {
		t.Fatalf("previews give no budget between half and whole: whole %d, half %d: %s", whole, half, body)
	}
	// Admission is need < available: a budget of exactly the whole
	// model's need refuses it on one node and admits each half.
	budget := whole
	t.Logf("one node needs %d bytes, the larger half %d (%d bytes apart); budget %d", whole, half, whole-half, budget)
	for _, n := range nodes {
		n.proc.Stop()
		n.args = append(n.args, "--memory-budget", fmt.Sprint(budget))
	}
	for _, n := range nodes {
		n.start()
	}
	netConverge(t, nodes, 2, 60*time.Second)
	inst, ranks := placeSplit(t, a, map[string]any{})
	if len(ranks) != 2 || ranks[0] == ranks[1] {
		t.Fatalf("instance %s placed on %v, want split over the two nodes", inst, ranks)
	}
	for _, n := range nodes {
		if got, _, err := n.content(storyRequest(false, 64)); err != nil || got != llamaCppStory {
			t.Fatalf("chat through %s: %q %v", n.host.Name(), got, err)
		}
	}
}
