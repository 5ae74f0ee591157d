package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// webDir is the dashboard's sources, with its browser tests in tests/.
var webDir = filepath.Join("..", "..", "web")

// screenshotDir is where the browser tests write their screenshots (the
// README names it).
var screenshotDir = filepath.Join(webDir, "screenshots")

// browserTest returns the command line of a dashboard browser test script,
// or skips: the tests need node, Debian's chromium (.ci/run installs it
// with apt) and web/node_modules (`cd web && npm ci`).
func browserTest(t *testing.T, script string) []string {
	t.Helper()
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no chromium at %s (apt-get install chromium, or set CHROMIUM): skipping the dashboard's browser test", chromium)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: skipping the dashboard's browser test")
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", "playwright-core")); err != nil {
		t.Skip("web/node_modules has no playwright-core (run `cd web && npm ci`): skipping the dashboard's browser test")
	}
	abs, err := filepath.Abs(filepath.Join(webDir, "tests", script))
	if err != nil {
		t.Fatal(err)
	}
	return []string{nodeBin, abs}
}

// absScreenshots is the screenshot folder as an absolute path (a script
// may run elsewhere than the package's directory).
func absScreenshots(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(screenshotDir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scriptResult is what a browser test script printed.
type scriptResult struct {
	lines []string
}

// value returns the JSON after "NAME " on the script's line of that name.
func (r scriptResult) value(t *testing.T, name string, v any) {
	t.Helper()
	for _, l := range r.lines {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			if err := json.Unmarshal([]byte(rest), v); err != nil {
				t.Fatalf("%s line %q: %v", name, l, err)
			}
			return
		}
	}
	t.Fatalf("the script printed no %s line", name)
}

// runScript runs a browser test to its end, logging its lines as they come;
// onLine may answer a line on the script's stdin (nil: none).
func runScript(t *testing.T, argv []string, env []string, timeout time.Duration, onLine func(line string, stdin io.Writer)) scriptResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var res scriptResult
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		res.lines = append(res.lines, line)
		if onLine != nil {
			onLine(line, stdin)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v (timeout %v)\n%s", filepath.Base(argv[1]), err, timeout, stderr.String())
	}
	return res
}

// TestDashboard drives the dashboard of a real node in chromium: the page
// loads with a strict CSP and no console errors; stories260k is placed from
// the Models panel and shows ready; a chat in the Chat panel streams the
// greedy text the API gives, and Stop ends an answer mid-stream; a model
// added from the Hub stand-in is pulled with a progress bar that moves and
// ends installed; an imported model is labelled imported; the chat offers
// skulk chat's defaults and sends its reply cap when the user sets none;
// conversations outlive a reload and can be deleted; a
// refusal shows the server's message; the tabs work from the keyboard;
// every panel is photographed in both themes at desktop and phone widths,
// none wider than the screen.
func TestDashboard(t *testing.T) {
	argv := browserTest(t, "single.mjs")
	hubSrv := hubstandin.New(t)
	hubSrv.AddRepo("skulk-test/stories-GGUF", "", hubstandin.File{Path: "stories-Q8_0.gguf", Local: storiesFile, LFS: true})
	hubSrv.SetPace(4 << 10) // 200 KB/s: the 1.2 MB download lasts about 6 s
	src, err := filepath.Abs(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, t.TempDir(), "HF_ENDPOINT="+hubSrv.URL(), "HF_TOKEN=", "SKULK_IMPORT_DIRS="+filepath.Dir(src))
	// A model imported from a local file: the Models panel calls it
	// imported.
	if code, b := n.do("POST", "/models/import", map[string]any{"path": src, "id": "stories-imported"}); code != 200 {
		t.Fatalf("import: %d %s", code, b)
	}
	// The chat's defaults are skulk chat's: the page must offer these.
	defaults, _ := json.Marshal(map[string]any{"max_tokens": request.ChatReplyTokens, "temperature": request.DefaultTemperature, "top_p": request.DefaultTopP})

	res := runScript(t, argv, []string{"SKULK_URL=" + n.base, "HUB_REF=hf:skulk-test/stories-GGUF", "HUB_MODEL=stories-q8_0",
		"IMPORTED_MODEL=stories-imported", "CHAT_DEFAULTS=" + string(defaults), "SCREENSHOTS=" + absScreenshots(t)}, 8*time.Minute, nil)
	var answer string
	res.value(t, "ANSWER", &answer)

	// The API's greedy answer to the same chat (the instance the page
	// placed serves it).
	code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64))
	var api struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &api); code != 200 || err != nil || len(api.Choices) != 1 {
		t.Fatalf("API chat: %d %s", code, b)
	}
	if answer != api.Choices[0].Message.Content || answer != llamaCppStory {
		t.Fatalf("the Chat panel answered %q, the API %q (llama.cpp: %q)", answer, api.Choices[0].Message.Content, llamaCppStory)
	}
	if _, m := n.model("stories-q8_0"); !m.Installed {
		t.Fatalf("the pulled model is not installed: %+v", m)
	}
}
