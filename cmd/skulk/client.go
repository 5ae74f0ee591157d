package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/platform/config"
)

// DefaultHost is where client commands find a node's API when neither
// --host nor SKULK_HOST names one.
const DefaultHost = "localhost:52415"

// hostUsage is the help of every client command's --host flag.
const hostUsage = "node API address HOST[:PORT] or URL (default: $SKULK_HOST, else " + DefaultHost + ")"

// addHostFlag adds --host and --api-key-file to a client command.
func addHostFlag(c *cobra.Command, host *string) {
	c.Flags().StringVar(host, "host", "", hostUsage)
	addKeyFileFlag(c)
}

// resolveHost is the node a client command talks to: --host, else
// SKULK_HOST, else localhost:52415. Like OLLAMA_HOST, it may be a URL, a
// host without a port (52415 then) or ":PORT" (localhost then).
func resolveHost(flag string, getenv func(string) string) string {
	h := strings.TrimSpace(flag)
	if h == "" {
		h = strings.TrimSpace(getenv("SKULK_HOST"))
	}
	if h == "" {
		return DefaultHost
	}
	scheme, rest, ok := strings.Cut(h, "://")
	if !ok {
		scheme, rest = "", h
	}
	hostport, path, _ := strings.Cut(rest, "/")
	if strings.HasPrefix(hostport, ":") {
		hostport = "localhost" + hostport
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), "52415")
	}
	out := hostport
	if path != "" {
		out += "/" + path
	}
	if scheme != "" {
		out = scheme + "://" + out
	}
	return out
}

// clientFor is the API client of client command cmd with --host value
// host, sending the key of its --api-key-file or SKULK_API_KEY.
func clientFor(cmd *cobra.Command, host string) *apiClient { return clientWith(host, keyFileOf(cmd)) }

// clientWith is the API client of --host host and key file kf.
func clientWith(host string, kf keyFile) *apiClient {
	c := newAPIClient(resolveHost(host, os.Getenv))
	c.key, c.keySource, c.keyErr = clientKey(kf, os.Getenv)
	return c
}

// apiClient talks to a node's HTTP API for the client commands.
type apiClient struct {
	base string
	key  string
	// keySource says where key came from (SKULK_API_KEY or a file's path),
	// for the messages that tell what to change.
	keySource string
	// keyErr is why the key file could not be read: every request fails
	// with it, so a bad file is never silently ignored.
	keyErr error
	http   *http.Client
}

// newAPIClient is a client of host that sends SKULK_API_KEY.
func newAPIClient(host string) *apiClient {
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	c := &apiClient{base: strings.TrimRight(host, "/"), key: config.FromEnv(os.Getenv).APIKey, http: &http.Client{}}
	if c.key != "" {
		c.keySource = "SKULK_API_KEY"
	}
	return c
}

// apiError is a non-2xx answer, with the server's message. Commands turn
// it into what to do with cliError.
type apiError struct {
	Status     int
	Message    string
	Code       string // the error's code, when the node gave one
	RetryAfter string
	explained  error // the message in the CLI's words
}

func (e *apiError) Error() string {
	if e.explained != nil {
		return e.explained.Error()
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

func (c *apiClient) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	if c.keyErr != nil {
		return nil, c.keyErr
	}
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
	return c.roundTrip(req, path)
}

// roundTrip sends req, to path under the node's address, with the client's
// key and turns a non-2xx answer into an *apiError.
func (c *apiClient) roundTrip(req *http.Request, path string) (*http.Response, error) {
	method := req.Method
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("cannot reach a skulk node at %s: start one with 'skulk serve', or name another with --host or SKULK_HOST (%w)", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return nil, &apiError{Status: resp.StatusCode, Message: msg, Code: e.Error.Code, RetryAfter: resp.Header.Get("Retry-After"),
			explained: c.explain(method, path, &apiError{Status: resp.StatusCode, Message: msg, RetryAfter: resp.Header.Get("Retry-After")})}
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
	// NodeResources are the live members' readings, with their names.
	NodeResources []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"nodeResources"`
	NodeHealth map[string]struct {
		Status      string   `json:"status"`
		Reasons     []string `json:"reasons"`
		Persistence []struct {
			Message string `json:"message"`
		} `json:"persistence"`
	} `json:"nodeHealth"`
}

// nodeLabel is how a node is shown to people: its name, with the start
// of its id after a slash when another live node goes by the same name;
// its id when it publishes no name (a lost node, or one from before
// names).
func (s clusterState) nodeLabel(id string) string {
	name, same := "", 0
	for _, r := range s.NodeResources {
		if r.ID == id {
			name = r.Name
		}
	}
	if name == "" {
		return id
	}
	for _, r := range s.NodeResources {
		if r.Name == name {
			same++
		}
	}
	if same > 1 {
		return name + "/" + shortID(id)
	}
	return name
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
// change of its runners' status and, while they download model's weights,
// a progress bar; it fails when the instance fails or disappears.
func (c *apiClient) waitReady(ctx context.Context, instance, model string, w io.Writer) error {
	start := time.Now()
	last := ""
	bar := &progressLine{w: w}
	defer bar.end()
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
			return fmt.Errorf("instance %s is gone ('skulk ps' lists the instances)", instance)
		}
		var parts []string
		downloading := false
		for i, r := range inst.Runners {
			st := r.Status
			if st == "" {
				st = "pending"
			}
			downloading = downloading || st == "downloading"
			parts = append(parts, fmt.Sprintf("rank %d %s", i, st))
		}
		line := inst.Status + ": " + strings.Join(parts, ", ")
		if line != last {
			bar.end()
			fmt.Fprintf(w, "  %s %s (%.1fs)\n", instance, line, time.Since(start).Seconds())
			last = line
		}
		if downloading && model != "" {
			var m struct {
				Download *struct {
					State      string `json:"state"`
					File       string `json:"file"`
					DoneBytes  int64  `json:"done_bytes"`
					TotalBytes int64  `json:"total_bytes"`
				} `json:"download"`
			}
			if c.call(ctx, http.MethodGet, "/models/"+escapeID(model), nil, &m) == nil && m.Download != nil && m.Download.State == "downloading" {
				bar.show(m.Download.DoneBytes, m.Download.TotalBytes, m.Download.File)
			}
		}
		switch inst.Status {
		case "ready":
			bar.end()
			fmt.Fprintf(w, "  %s ready in %.1fs\n", instance, time.Since(start).Seconds())
			return nil
		case "failed":
			return fmt.Errorf("instance %s failed ('skulk ps' and the node's log say why)", instance)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// streamResult is the end of a streamed chat completion.
type streamResult struct {
	Trace                          string // the X-Skulk-Trace header
	Finish                         string
	PromptTokens, CompletionTokens int
}

// streamChat posts a streaming chat completion and calls onDelta with each
// piece of content.
func (c *apiClient) streamChat(ctx context.Context, body map[string]any, onDelta func(content, reasoning string)) (streamResult, error) {
	var res streamResult
	body["stream"] = true
	resp, err := c.do(ctx, http.MethodPost, "/v1/chat/completions", body)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	res.Trace = resp.Header.Get("X-Skulk-Trace")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
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
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return res, fmt.Errorf("bad stream chunk %q: %w", data, err)
		}
		if ch.Error != nil {
			return res, errors.New(routeFree(ch.Error.Message))
		}
		for _, choice := range ch.Choices {
			onDelta(choice.Delta.Content, choice.Delta.ReasoningContent)
			if choice.FinishReason != nil {
				res.Finish = *choice.FinishReason
			}
		}
		if ch.Usage != nil {
			res.PromptTokens, res.CompletionTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
	}
	return res, sc.Err()
}

// explain turns a node's refusal into the CLI's language: what to do, with
// the command that helps, instead of an HTTP route.
func (c *apiClient) explain(method, path string, e *apiError) error {
	msg := e.Message
	switch e.Status {
	case http.StatusUnauthorized:
		if c.key == "" {
			return fmt.Errorf("the node at %s requires an API key: set SKULK_API_KEY to the cluster's key (export SKULK_API_KEY=KEY), or save it in %s (mode 0600), and run the command again", c.base, orDefault(defaultKeyFile(), "the file --api-key-file names"))
		}
		return fmt.Errorf("the node at %s does not accept the key in %s: set it to the cluster's admin key (or an inference key for chat)", c.base, orDefault(c.keySource, "SKULK_API_KEY"))
	case http.StatusForbidden:
		switch {
		case strings.Contains(msg, "only with an API key"):
			return fmt.Errorf("the node at %s serves only clients on its own machine while the cluster has no API key: "+
				"run the command on that machine, or set SKULK_API_KEY on a node of the cluster and here, or restart the node with 'skulk serve --api-open'", c.base)
		case strings.Contains(msg, "needs the admin key"):
			return fmt.Errorf("%s holds an inference key, and this command needs the cluster's admin key: put an admin key there", orDefault(c.keySource, "SKULK_API_KEY"))
		}
	case http.StatusNotFound:
		switch {
		case strings.HasPrefix(path, "/instance/"):
			id := strings.TrimPrefix(path, "/instance/")
			return fmt.Errorf("no instance %s on the cluster: name one by its id, the start of its id, or its model; 'skulk ps' lists the instances", id)
		case strings.Contains(path, "/models/import"), strings.HasPrefix(path, "/models/upload/"):
		case path == "/models/add":
			// The Hub's answer about the reference says it all.
		case strings.HasPrefix(path, "/models/") || path == "/place_instance" || path == "/v1/chat/completions" || path == "/v1/messages/count_tokens":
			if !strings.Contains(msg, "skulk models") && !strings.Contains(msg, "skulk pull") {
				msg += "; 'skulk models list' shows the catalog, and 'skulk models add' adds a model"
			}
		}
	case http.StatusServiceUnavailable:
		if e.RetryAfter != "" {
			msg += fmt.Sprintf(" (the node says to try again in %s s)", e.RetryAfter)
		}
	}
	return fmt.Errorf("%s (HTTP %d)", routeFree(msg), e.Status)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// routeFree replaces the HTTP routes a node names in its messages with the
// commands that do the same.
func routeFree(msg string) string {
	return strings.NewReplacer(
		"GET /models/library", "skulk list --library",
		"GET /models", "skulk models list",
		"GET /state", "skulk ps",
		"POST /place_instance", "skulk place",
		"POST /models/import", "skulk models import",
		"POST /models/pull", "skulk models pull",
		"POST /models/add", "skulk models add",
		`POST /tracing {"enabled": true}`, "skulk trace on",
	).Replace(msg)
}
