package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/config"
)

// DefaultHost is where client commands find a node's API.
const DefaultHost = "localhost:52415"

// apiClient talks to a node's HTTP API for the client commands.
type apiClient struct {
	base string
	key  string
	http *http.Client
}

func newAPIClient(host string) *apiClient {
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return &apiClient{base: strings.TrimRight(host, "/"), key: config.FromEnv(os.Getenv).APIKey, http: &http.Client{}}
}

// apiError is a non-2xx answer, with the server's message.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

func (c *apiClient) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot reach a skulk node at %s (is `skulk run` running? use --host): %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return nil, &apiError{Status: resp.StatusCode, Message: msg}
	}
	return resp, nil
}

// getJSON decodes a JSON answer into v.
func (c *apiClient) call(ctx context.Context, method, path string, body, v any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// clusterState is the part of GET /state the client commands read.
type clusterState struct {
	Instances map[string]struct {
		Model         string `json:"model"`
		Status        string `json:"status"`
		ContextTokens int    `json:"context_tokens"`
		Placement     []struct {
			Node       string `json:"node"`
			LayerStart int    `json:"layer_start"`
			LayerEnd   int    `json:"layer_end"`
		} `json:"placement"`
		Runners []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"runners"`
	} `json:"instances"`
	Failures []struct {
		Instance string `json:"instance"`
		Category string `json:"category"`
		Detail   string `json:"detail"`
	} `json:"failures"`
	NodeHealth map[string]struct {
		Status      string `json:"status"`
		Persistence []struct {
			Message string `json:"message"`
		} `json:"persistence"`
	} `json:"nodeHealth"`
}

// persistenceWarnings lists, node by node, what keeps a node from keeping
// the cluster's decisions.
func (s clusterState) persistenceWarnings() []string {
	nodes := make([]string, 0, len(s.NodeHealth))
	for n := range s.NodeHealth {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var out []string
	for _, n := range nodes {
		for _, p := range s.NodeHealth[n].Persistence {
			out = append(out, fmt.Sprintf("warning: node %s: %s", n, p.Message))
		}
	}
	return out
}

func (c *apiClient) state(ctx context.Context) (clusterState, error) {
	var s clusterState
	err := c.call(ctx, http.MethodGet, "/state", nil, &s)
	return s, err
}

// waitReady polls the State until the instance is ready, printing each
// change of its runners' status, and fails when it fails or disappears.
func (c *apiClient) waitReady(ctx context.Context, instance string, w io.Writer) error {
	last := ""
	for {
		s, err := c.state(ctx)
		if err != nil {
			return err
		}
		inst, ok := s.Instances[instance]
		if !ok {
			for _, f := range s.Failures {
				if f.Instance == instance {
					return fmt.Errorf("instance %s failed (%s): %s", instance, f.Category, f.Detail)
				}
			}
			return fmt.Errorf("instance %s is gone", instance)
		}
		var parts []string
		for i, r := range inst.Runners {
			st := r.Status
			if st == "" {
				st = "pending"
			}
			parts = append(parts, fmt.Sprintf("rank %d %s", i, st))
		}
		line := inst.Status + ": " + strings.Join(parts, ", ")
		if line != last {
			fmt.Fprintf(w, "  %s %s\n", instance, line)
			last = line
		}
		switch inst.Status {
		case "ready":
			return nil
		case "failed":
			return fmt.Errorf("instance %s failed", instance)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// streamChat posts a streaming chat completion and calls onDelta with each
// piece of content.
func (c *apiClient) streamChat(ctx context.Context, body map[string]any, onDelta func(content, reasoning string)) (string, error) {
	body["stream"] = true
	resp, err := c.do(ctx, http.MethodPost, "/v1/chat/completions", body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	finish := ""
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return "", fmt.Errorf("bad stream chunk %q: %w", data, err)
		}
		if ch.Error != nil {
			return "", errors.New(ch.Error.Message)
		}
		for _, choice := range ch.Choices {
			onDelta(choice.Delta.Content, choice.Delta.ReasoningContent)
			if choice.FinishReason != nil {
				finish = *choice.FinishReason
			}
		}
	}
	return finish, sc.Err()
}
