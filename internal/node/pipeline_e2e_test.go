package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPipelineAcrossNodes: stories260K placed on two of three loopback
// nodes (min_nodes 2) runs as one pipeline, rank 0's runner on one node and
// rank 1's on another joined over QUIC (skulk/edge/1); chat through every
// node's API, the one that holds no stage included, gives llama.cpp's
// greedy text, plain and streamed, and with logprobs, a response_format
// JSON schema, a forced tool call or a stop sequence exactly the answer of
// the model placed whole.
func TestPipelineAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	var gossip []string
	for range 3 {
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip))
	}
	converged(t, nodes, len(nodes), 30*time.Second)
	place := func(minNodes int) string {
		t.Helper()
		code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "min_nodes": minNodes})
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		if err := json.Unmarshal(b, &r); code != 200 || err != nil {
			t.Fatalf("place (min_nodes %d): %d %s", minNodes, code, b)
		}
		for _, n := range nodes {
			n.waitStatus(r.InstanceID, "ready")
		}
		return r.InstanceID
	}

	// What the model placed whole answers is what the split must answer.
	whole := place(1)
	cases := sameAnswerCases()
	want := make([]string, len(cases))
	for i, c := range cases {
		want[i] = chatAnswer(t, nodes[0], c.body)
		if !strings.Contains(want[i], c.mark) {
			t.Fatalf("%s on the whole model: %s lacks %s", c.name, want[i], c.mark)
		}
		t.Logf("%s: %.200s", c.name, want[i])
	}
	if code, b := nodes[0].do("DELETE", "/instance/"+whole, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	for _, n := range nodes {
		n.waitStatus(whole, "gone")
	}

	start := time.Now()
	inst := place(2)
	t.Logf("the 2-node pipeline was ready %v after placement", time.Since(start))
	if rs := nodes[0].state().Instances[inst].Runners; len(rs) != 2 {
		t.Fatalf("%d runners, want 2 ranks", len(rs))
	}
	_, b := nodes[0].do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node string `json:"node"`
			} `json:"placement"`
		} `json:"instances"`
	}
	json.Unmarshal(b, &st)
	byID := map[string]*clusterNode{}
	for _, n := range nodes {
		byID[nodeID(n.home)] = n
	}
	var later, free *clusterNode
	holds := map[*clusterNode]bool{}
	for i, p := range st.Instances[inst].Placement {
		holds[byID[p.Node]] = true
		if i == 1 {
			later = byID[p.Node]
		}
	}
	for _, n := range nodes {
		if !holds[n] {
			free = n
		}
	}
	if later == nil || free == nil {
		t.Fatalf("placement %+v: want two of the three nodes", st.Instances[inst].Placement)
	}
	for i, n := range nodes {
		code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64))
		var resp struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &resp); code != 200 || err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != llamaCppStory {
			t.Fatalf("chat through node %d (stage %v): %d %s", i, holds[n], code, b)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		res, err := n.stream(ctx, storyRequest(true, 64), nil)
		cancel()
		if err != nil || res.content != llamaCppStory || res.errMsg != "" || !res.done {
			t.Fatalf("streamed chat through node %d (stage %v): %+v %v", i, holds[n], res, err)
		}
		for k, c := range cases {
			if got := chatAnswer(t, n, c.body); got != want[k] {
				t.Fatalf("%s through node %d (stage %v):\n split %s\n whole %s", c.name, i, holds[n], got, want[k])
			}
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var killed time.Time
	res, err := free.stream(ctx, storyRequest(true, 100000), func(i int, _ string) {
		if i == 2 {
			pids := runnerPIDs(later.cmd.Process.Pid)
			if len(pids) != 1 {
				t.Errorf("the later rank's node runs runners %v", pids)
			}
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			killed = time.Now()
		}
	})
	if err != nil || res.errMsg == "" {
		t.Fatalf("the stream after rank 1 was killed: %+v %v", res, err)
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Fatalf("the error came %v after the kill", d)
	}
	t.Logf("error event %v after the kill: %s", time.Since(killed), res.errMsg)
	for _, n := range nodes {
		n.waitStatus(inst, "ready")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := free.do("POST", "/v1/chat/completions", storyRequest(false, 64))
		if code == 200 && strings.Contains(string(b), llamaCppStory[:40]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d %s", code, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sameAnswerCase is a chat request whose answer over a split must equal the
// whole model's; mark is a part of that answer that shows the feature did
// its work.
type sameAnswerCase struct {
	name string
	body map[string]any
	mark string
}

func sameAnswerCases() []sameAnswerCase {
	with := func(r map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return r
	}
	schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "pet", "schema": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"name", "mood", "ok"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 12},
			"mood": map[string]any{"enum": []string{"happy", "sad"}},
			"ok":   map[string]any{"type": "boolean"},
		}}}}
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 10}}}}}}
	return []sameAnswerCase{
		{"logprobs", with(storyRequest(false, 16), "logprobs", true, "top_logprobs", 5), `"top_logprobs":[{`},
		{"json_schema", with(storyRequest(false, 200), "response_format", schema), `"finish_reason":"stop"`},
		{"json_schema_sampled_logprobs", with(storyRequest(false, 200), "response_format", schema, "temperature", 1, "seed", 3,
			"logprobs", true, "top_logprobs", 2), `mood\"`},
		{"forced_tool_call", with(storyRequest(false, 200), "tools", tools, "tool_choice", "required"), `"finish_reason":"tool_calls"`},
		{"stop", with(storyRequest(false, 64), "stop", []string{"park"}), `outside in the "`},
	}
}

// apiNode is a node whose API a test calls: a loopback or netns node.
type apiNode interface {
	do(method, path string, body any) (int, []byte)
}

// chatAnswer is the choice and token counts of a chat completion through
// n: what two runs of the same request must share (not the timings, nor
// the prompt tokens a runner's prefix cache held).
func chatAnswer(t *testing.T, n apiNode, body map[string]any) string {
	t.Helper()
	code, b := n.do("POST", "/v1/chat/completions", body)
	var resp struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &resp); code != 200 || err != nil || len(resp.Choices) != 1 {
		t.Fatalf("chat: %d %s", code, b)
	}
	return fmt.Sprintf("%s %+v", resp.Choices[0], resp.Usage)
}
