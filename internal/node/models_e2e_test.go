package node_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// storiesFile is the real GGUF the stand-in Hub serves.
var storiesFile = filepath.Join("..", "..", "testdata", "models", "stories260K.gguf")

// storiesStorage is stories260K's file size, storiesWeights its tensor
// bytes, and its KV cache per token in the runner's fp16 cache (5 layers ×
// K and V × 4 KV heads × 8 dims × 2 bytes).
const (
	storiesStorage    = 1185376
	storiesWeights    = 1171200
	storiesKVPerToken = 5 * 2 * 4 * 8 * 2
)

// cli runs the skulk binary as a client of n and returns its exit code and
// combined output.
func (n *node) cli(args ...string) (int, string) {
	n.t.Helper()
	cmd := exec.Command(skulkBin, append(args, "--host", n.base)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("skulk %v: %v", args, err)
	}
	return code, out.String()
}

// modelDoc is GET /models/{id}.
type modelDoc struct {
	ID           string                 `json:"model_id"`
	Repo         string                 `json:"source_repository"`
	Revision     string                 `json:"source_revision"`
	Files        []string               `json:"files"`
	StorageBytes int64                  `json:"storage_bytes"`
	Installed    bool                   `json:"installed"`
	Reason       string                 `json:"reason"`
	Placement    string                 `json:"placement"`
	Download     *downloadDoc           `json:"download"`
	NodeDownload map[string]downloadDoc `json:"node_downloads"`
	HeldBy       []string               `json:"held_by"`
}

type downloadDoc struct {
	State      string `json:"state"`
	DoneBytes  int64  `json:"done_bytes"`
	TotalBytes int64  `json:"total_bytes"`
	Error      string `json:"error"`
}

func (n *node) model(id string) (int, modelDoc) {
	n.t.Helper()
	code, b := n.do("GET", "/models/"+id, nil)
	var m modelDoc
	if code == 200 {
		if err := json.Unmarshal(b, &m); err != nil {
			n.t.Fatalf("GET /models/%s: %v: %s", id, err, b)
		}
	}
	return code, m
}

// catalogEntries is GET /models by model id.
func (n *node) catalogEntries() map[string]modelDoc {
	n.t.Helper()
	code, b := n.do("GET", "/models", nil)
	if code != 200 {
		n.t.Fatalf("GET /models: %d %s", code, b)
	}
	var doc struct {
		Data []modelDoc `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		n.t.Fatal(err)
	}
	out := map[string]modelDoc{}
	for _, m := range doc.Data {
		out[m.ID] = m
	}
	return out
}

// placeModel places a model and returns the instance id.
func (n *node) placeModel(model string, contextTokens int) string {
	n.t.Helper()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": model, "context_tokens": contextTokens})
	if code != 200 {
		n.t.Fatalf("place %s: %d %s", model, code, b)
	}
	var r struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &r)
	return r.InstanceID
}

// completion asks a model for the greedy 64-token continuation of "Once
// upon a time" (the raw prompt, no chat template).
func (n *node) completion(model string) string {
	n.t.Helper()
	code, b := n.do("POST", "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0})
	if code != 200 {
		n.t.Fatalf("completion on %s: %d %s", model, code, b)
	}
	var r struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
		n.t.Fatalf("completion answer %s", b)
	}
	return r.Choices[0].Text
}

// waitFor polls cond every 50 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestModelFromHub adds a model from a stand-in Hub by repository name, sizes
// it, places it (the download happens on placement, watched through GET
// /models/{id}), chats with it, restarts the node and finds it installed
// and serving without a single request to the Hub, then edits the file on
// disk and finds it reported not installed with the reason; pulls it back
// with the CLI's progress bar, and removes it.
func TestModelFromHub(t *testing.T) {
	hubSrv := hubstandin.New(t)
	commit := hubSrv.AddRepo("skulk-test/stories-GGUF", "", hubstandin.File{Path: "stories-Q8_0.gguf", Local: storiesFile, LFS: true})
	home := t.TempDir()
	env := []string{"HF_ENDPOINT=" + hubSrv.URL(), "HF_TOKEN="}
	n := startNode(t, home, env...)
	const id = "stories-q8_0"

	// Add by repository name with the CLI: the file and id are derived,
	// the revision is pinned to the commit.
	code, out := n.cli("models", "add", "hf:skulk-test/stories-GGUF")
	if code != 0 || !strings.Contains(out, "added "+id+": skulk-test/stories-GGUF@"+commit+" stories-Q8_0.gguf") {
		t.Fatalf("models add: exit %d: %s", code, out)
	}
	if code, m := n.model(id); code != 200 || m.Installed || m.Revision != commit || !strings.Contains(m.Reason, "no complete download") {
		t.Fatalf("after add: %d %+v", code, m)
	}
	// The same id again is a conflict; an unknown repository is a 404.
	if code, b := n.do("POST", "/models/add", map[string]any{"ref": "hf:skulk-test/stories-GGUF"}); code != 409 || !strings.Contains(string(b), "already exists") {
		t.Fatalf("second add: %d %s", code, b)
	}
	if code, b := n.do("POST", "/models/add", map[string]any{"ref": "hf:skulk-test/missing"}); code != 404 || !strings.Contains(string(b), "no such repository") {
		t.Fatalf("add of a missing repository: %d %s", code, b)
	}
	if code, b := n.do("GET", "/models/search?q=stories", nil); code != 200 || !strings.Contains(string(b), `"id":"skulk-test/stories-GGUF"`) {
		t.Fatalf("search: %d %s", code, b)
	}

	// Requirements at a context of 256 tokens.
	code, b := n.do("GET", "/models/requirements?model_id="+id+"&context=256", nil)
	var req struct {
		WeightBytes     int64 `json:"weight_bytes"`
		KVBytesPerToken int64 `json:"kv_bytes_per_token"`
		KVBytes         int64 `json:"kv_bytes"`
		FootprintBytes  int64 `json:"footprint_bytes"`
		ContextTokens   int   `json:"context_tokens"`
	}
	if err := json.Unmarshal(b, &req); code != 200 || err != nil {
		t.Fatalf("requirements: %d %s", code, b)
	}
	if req.WeightBytes != storiesWeights || req.KVBytesPerToken != storiesKVPerToken || req.ContextTokens != 256 ||
		req.KVBytes != 256*storiesKVPerToken || req.FootprintBytes != storiesWeights+storiesWeights/10+placement.RunnerOverheadBytes+256*storiesKVPerToken {
		t.Fatalf("requirements %+v from %s", req, b)
	}

	// Place: the node downloads the weights (paced, so it can be watched),
	// loads them and serves llama.cpp's greedy text.
	hubSrv.SetPace(32 << 10)
	inst := n.placeModel(id, 0)
	sawDownloading, runnerDownloading := false, false
	waitFor(t, 60*time.Second, "the instance to be ready", func() bool {
		if _, m := n.model(id); m.Download != nil && m.Download.State == "downloading" {
			sawDownloading = true
		}
		st := n.state()
		for _, r := range st.Instances[inst].Runners {
			runnerDownloading = runnerDownloading || r.Status == "downloading"
		}
		return st.Instances[inst].Status == "ready"
	})
	hubSrv.SetPace(0)
	if !sawDownloading {
		t.Error("the download was never seen in progress")
	}
	if !runnerDownloading {
		t.Error("the runner never reported the downloading status")
	}
	if _, m := n.model(id); !m.Installed || m.Download == nil || m.Download.State != "done" || m.Download.DoneBytes != m.Download.TotalBytes {
		t.Fatalf("after placement: %+v (download %+v)", m, m.Download)
	}
	if got := n.completion(id); got != llamaCppStory {
		t.Fatalf("completion %q, want llama.cpp's %q", got, llamaCppStory)
	}
	// The node's metrics counted every byte transferred, and no failure.
	_, dl := n.model(id)
	s := n.scrapeMetrics()
	if v, ok := s.value("skulk_model_download_bytes_total", map[string]string{"model": id}); !ok || v != float64(dl.Download.TotalBytes) {
		t.Errorf("skulk_model_download_bytes_total = %v (found %v), want the %d bytes downloaded", v, ok, dl.Download.TotalBytes)
	}
	if v, ok := s.value("skulk_model_download_failures_total", map[string]string{"model": id}); ok && v != 0 {
		t.Errorf("skulk_model_download_failures_total = %v after a download that succeeded", v)
	}
	// The outcome was gossiped as telemetry (dl/<model>).
	waitFor(t, 10*time.Second, "the download reading in the telemetry", func() bool {
		_, m := n.model(id)
		for _, d := range m.NodeDownload {
			if d.State == "done" && d.DoneBytes == d.TotalBytes && d.TotalBytes >= storiesStorage {
				return true
			}
		}
		return false
	})
	// The worker reported the download's outcome into the replicated State.
	waitFor(t, 10*time.Second, "DownloadCompleted in the State", func() bool {
		_, b := n.do("GET", "/state", nil)
		var st struct {
			Nodes map[string]struct {
				Downloads map[string]struct {
					Status string `json:"status"`
					Bytes  int64  `json:"bytes"`
				} `json:"downloads"`
			} `json:"nodes"`
		}
		json.Unmarshal(b, &st)
		for _, nd := range st.Nodes {
			if d := nd.Downloads[id]; d.Status == "completed" && d.Bytes >= storiesStorage {
				return true
			}
		}
		return false
	})

	if len(hubSrv.Requests("")) == 0 {
		t.Fatal("the stand-in Hub saw no requests")
	}
	// Restart: the placement comes back, the model is installed and
	// verified, and nothing is asked of the Hub.
	oldRunner := n.state().Instances[inst].Runners[0].ID
	n.stop()
	before := len(hubSrv.Requests(""))
	n = startNode(t, home, env...)
	waitFor(t, 60*time.Second, "a new runner of the instance to be ready", func() bool {
		in := n.state().Instances[inst]
		return in.Status == "ready" && len(in.Runners) == 1 && in.Runners[0].ID != oldRunner && in.Runners[0].Status == "ready"
	})
	if got := n.completion(id); got != llamaCppStory {
		t.Fatalf("completion after restart %q", got)
	}
	if m := n.catalogEntries()[id]; !m.Installed {
		t.Fatalf("after restart: %+v", m)
	}
	if after := len(hubSrv.Requests("")); after != before {
		t.Fatalf("the restarted node made %d requests to the Hub", after-before)
	}

	// rm refuses while the instance uses the model.
	if code, out := n.cli("models", "rm", id); code != 1 || !strings.Contains(out, "is used by instance "+inst) {
		t.Fatalf("rm while placed: exit %d: %s", code, out)
	}
	if code, b := n.do("DELETE", "/instance/"+inst, nil); code != 200 {
		t.Fatalf("delete instance: %d %s", code, b)
	}
	n.waitStatus(inst, "gone")

	// Edit the downloaded file on disk (same size): at startup the model
	// is reported not installed with the reason.
	n.stop()
	files, _ := filepath.Glob(filepath.Join(home, "models", "skulk-test--stories-GGUF", commit, id, "stories-Q8_0.gguf"))
	if len(files) != 1 {
		t.Fatalf("downloaded file not found under %s", home)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-100] ^= 0xff
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, home, env...)
	m := n.catalogEntries()[id]
	if m.Installed || !strings.Contains(m.Reason, "stories-Q8_0.gguf was changed on disk: sha256") || !strings.Contains(m.Reason, "pull the model again") {
		t.Fatalf("after the file was edited: %+v", m)
	}
	if !strings.Contains(n.logs.String(), "model is not installed") {
		t.Error("the node did not warn about the edited file at startup")
	}

	// Pull it again with the CLI: a progress bar, then installed.
	hubSrv.SetPace(64 << 10)
	code, out = n.cli("models", "pull", id)
	if code != 0 || !strings.Contains(out, "[##############################] 100%") || !strings.Contains(out, id+" is installed") {
		t.Fatalf("models pull: exit %d: %q", code, out)
	}
	if code, out := n.cli("models", "show", id); code != 0 || !strings.Contains(out, "installed") || !strings.Contains(out, "hf:skulk-test/stories-GGUF@"+commit) {
		t.Fatalf("models show: exit %d: %s", code, out)
	}

	// Remove card and files: the model leaves the catalog and the disk.
	if code, out := n.cli("models", "rm", id, "--files"); code != 0 || !strings.Contains(out, "removed its card and 1 downloaded copy of "+id) {
		t.Fatalf("rm --files: exit %d: %s", code, out)
	}
	if _, ok := n.catalogEntries()[id]; ok {
		t.Fatal("the model is still listed after rm --files")
	}
	if _, err := os.Stat(filepath.Dir(files[0])); !os.IsNotExist(err) {
		t.Fatalf("the artifact directory is still there: %v", err)
	}
	if code, out := n.cli("models", "list"); code != 0 || strings.Contains(out, id) || !strings.Contains(out, "stories260k") {
		t.Fatalf("models list: exit %d: %s", code, out)
	}
}

// TestModelImportOffline runs a node in offline mode: adds and searches are
// refused with the reason, the built-in model still places; a truncated
// GGUF is refused at import; a GGUF whose header disagrees with its tensors
// imports but fails its placement with a runner status that says why,
// while the node keeps serving.
func TestModelImportOffline(t *testing.T) {
	home := t.TempDir()
	n := startNode(t, home, "SKULK_OFFLINE=1")

	code, out := n.cli("models", "add", "hf:skulk-test/stories-GGUF")
	if code != 1 || !strings.Contains(out, "offline mode is on (SKULK_OFFLINE)") || !strings.Contains(out, "HTTP 503") {
		t.Fatalf("add offline: exit %d: %s", code, out)
	}
	if code, b := n.do("GET", "/models/search?q=x", nil); code != 503 || !strings.Contains(string(b), "offline") {
		t.Fatalf("search offline: %d %s", code, b)
	}
	builtin := n.place()
	n.waitStatus(builtin, "ready")

	// A card written by hand into the custom cards directory joins the
	// catalog without a restart; placing it cannot download while offline,
	// and the runner status and the State's download outcome say so.
	hubCard := writeHubCard(t, n, "offline-model")
	waitFor(t, 10*time.Second, "the hand-written card in the catalog", func() bool {
		code, m := n.model(hubCard)
		return code == 200 && !m.Installed && strings.Contains(m.Reason, "no complete download")
	})
	offline := n.placeModel(hubCard, 0)
	reason := runnerFailure(t, n, offline)
	if !strings.Contains(reason, "weights of offline-model are not available") || !strings.Contains(reason, "offline mode is on (SKULK_OFFLINE)") {
		t.Fatalf("runner failure reason %q", reason)
	}
	waitFor(t, 10*time.Second, "DownloadFailed in the State", func() bool {
		return strings.Contains(downloadOutcome(n, hubCard), "failed: hub: downloading offline-model needs the Hugging Face Hub")
	})

	dir := filepath.Join(home, "models", "import") // the default import directory
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, good[:len(good)/2], 0o644)
	if code, out := n.cli("models", "import", truncated); code != 1 || !strings.Contains(out, "is not a usable GGUF file") {
		t.Fatalf("import truncated: exit %d: %s", code, out)
	}
	if _, ok := n.catalogEntries()["truncated"]; ok {
		t.Fatal("the truncated file entered the catalog")
	}

	// A header whose feed-forward length disagrees with the tensors.
	corrupt := filepath.Join(dir, "corrupt.gguf")
	os.WriteFile(corrupt, patchUint32(t, good, "llama.feed_forward_length", 32), 0o644)
	if code, out := n.cli("models", "import", corrupt, "--id", "corrupt"); code != 0 || !strings.Contains(out, "imported corrupt from "+corrupt) {
		t.Fatalf("import corrupt: exit %d: %s", code, out)
	}
	if m := n.catalogEntries()["corrupt"]; !m.Installed || m.StorageBytes != storiesStorage {
		t.Fatalf("imported model %+v", m)
	}
	inst := n.placeModel("corrupt", 0)
	reason = runnerFailure(t, n, inst)
	if !strings.Contains(reason, "load failed") || !strings.Contains(reason, "tensor blk.0.ffn_gate.weight has shape") {
		t.Fatalf("runner failure reason %q", reason)
	}
	// The node still serves the built-in model.
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 8)); code != 200 {
		t.Fatalf("chat after the failed placement: %d %s", code, b)
	}
}

// patchUint32 returns a copy of a GGUF file with the uint32 metadata value
// of key increased by delta.
func patchUint32(t *testing.T, b []byte, key string, delta uint32) []byte {
	t.Helper()
	out := bytes.Clone(b)
	i := bytes.Index(out, []byte(key))
	if i < 0 {
		t.Fatalf("no %s in the file", key)
	}
	at := i + len(key)
	if typ := binary.LittleEndian.Uint32(out[at:]); typ != 4 { // GGUF type 4: uint32
		t.Fatalf("%s has type %d, want uint32", key, typ)
	}
	v := binary.LittleEndian.Uint32(out[at+4:])
	binary.LittleEndian.PutUint32(out[at+4:], v+delta)
	return out
}

// runnerFailure waits until a runner of the instance reports failed and
// returns its reason.
func runnerFailure(t *testing.T, n *node, inst string) string {
	t.Helper()
	var reason string
	waitFor(t, 60*time.Second, "a runner of "+inst+" to fail", func() bool {
		_, b := n.do("GET", "/state", nil)
		var st struct {
			Instances map[string]struct {
				Runners []struct{ Status, Reason string } `json:"runners"`
			} `json:"instances"`
		}
		json.Unmarshal(b, &st)
		for _, r := range st.Instances[inst].Runners {
			if r.Status == "failed" {
				reason = r.Reason
				return true
			}
		}
		return false
	})
	return reason
}

// downloadOutcome is "STATUS: REASON" of the model's download in the
// State, on any node.
func downloadOutcome(n *node, model string) string {
	_, b := n.do("GET", "/state", nil)
	var st struct {
		Nodes map[string]struct {
			Downloads map[string]struct{ Status, Reason string } `json:"downloads"`
		} `json:"nodes"`
	}
	json.Unmarshal(b, &st)
	for _, nd := range st.Nodes {
		if d, ok := nd.Downloads[model]; ok {
			return d.Status + ": " + d.Reason
		}
	}
	return ""
}

// writeHubCard writes a custom card for a Hub model (the demo model's shape,
// from a repository that is never contacted) into the node's custom cards
// directory, as an operator would, and returns its id.
func writeHubCard(t *testing.T, n *node, id string) string {
	t.Helper()
	code, b := n.do("GET", "/models/"+catalog.BuiltinID, nil)
	var c catalog.Card
	if err := json.Unmarshal(b, &c); code != 200 || err != nil {
		t.Fatalf("GET /models/%s: %d %v", catalog.BuiltinID, code, err)
	}
	c.ID, c.Builtin, c.ChatTemplate = id, false, ""
	c.Repo, c.Revision, c.Files = "skulk-test/unreachable-GGUF", strings.Repeat("ab", 20), []string{"m-Q8_0.gguf"}
	toml, err := catalog.EncodeCardTOML(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(n.home, "custom_model_cards")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
	return id
}
