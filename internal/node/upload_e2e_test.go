package node_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// uploadDoc is GET /models/upload/{sha256}.
type uploadDoc struct {
	Received  int64 `json:"received_bytes"`
	Uploading bool  `json:"uploading"`
}

// putUpload sends body as the bytes of contentRange ("" for the whole file)
// of the file with this digest.
func putUpload(t *testing.T, base, digest, name, contentRange string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", base+"/models/upload/"+digest+"?"+url.Values{"name": {name}}.Encode(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentRange != "" {
		req.Header.Set("Content-Range", contentRange)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("PUT upload: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// uploadStatus is what the node holds of the file with this digest.
func (n *node) uploadStatus(digest string) uploadDoc {
	n.t.Helper()
	code, b := n.do("GET", "/models/upload/"+digest, nil)
	var d uploadDoc
	if code != 200 || json.Unmarshal(b, &d) != nil {
		n.t.Fatalf("GET /models/upload: %d %s", code, b)
	}
	return d
}

// TestModelUpload imports a file outside the node's import directories by
// upload: the path import is refused; a corrupted upload is refused by its
// SHA-256 and leaves nothing; an upload whose connection is cut in the
// middle of its body keeps the bytes that arrived, refuses a range that
// does not continue them, and `skulk models import FILE` resumes from there
// and completes; the model then serves, as the built-in model of the same
// bytes does.
func TestModelUpload(t *testing.T) {
	userHome, home := t.TempDir(), t.TempDir()
	n := startNode(t, home, "HOME="+userHome, "SKULK_OFFLINE=1")
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(good)
	digest := hex.EncodeToString(sum[:])
	total := len(good)
	outside := filepath.Join(t.TempDir(), "uploaded.gguf")
	if err := os.WriteFile(outside, good, 0o644); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(home, "models", ".skulk", "upload", digest+".part")

	if code, b := n.do("POST", "/models/import", map[string]any{"path": outside, "id": "uploaded"}); code != 404 {
		t.Fatalf("path import from outside the import directories: %d %s", code, b)
	}

	// Corrupted: one byte in the middle differs.
	bad := bytes.Clone(good)
	bad[total/2] ^= 0x40
	if code, b := putUpload(t, n.base, digest, "uploaded.gguf", "", bad); code != 400 || !strings.Contains(b, `"code":"digest_mismatch"`) {
		t.Fatalf("corrupted upload: %d %s", code, b)
	}
	if st := n.uploadStatus(digest); st.Received != 0 {
		t.Fatalf("after the corrupted upload the node holds %d bytes", st.Received)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Fatalf("the corrupted upload's file stayed: %v", err)
	}

	// Cut: the headers promise the whole file, half of it comes, and the
	// connection closes.
	half := total / 2
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /models/upload/%s?name=uploaded.gguf HTTP/1.1\r\nHost: node\r\nContent-Length: %d\r\nContent-Range: bytes 0-%d/%d\r\n\r\n", digest, total, total-1, total)
	if _, err := conn.Write(good[:half]); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for st := n.uploadStatus(digest); st.Received != int64(half) || st.Uploading; st = n.uploadStatus(digest) {
		if time.Now().After(deadline) {
			t.Fatalf("after the cut the node holds %+v, want %d bytes and no upload running", st, half)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A range that skips a byte is refused, and changes nothing.
	if code, b := putUpload(t, n.base, digest, "uploaded.gguf", fmt.Sprintf("bytes %d-%d/%d", half+1, total-1, total), good[half+1:]); code != 409 || !strings.Contains(b, `"code":"upload_offset"`) || !strings.Contains(b, fmt.Sprintf("resume from byte %d", half)) {
		t.Fatalf("a range past the held bytes: %d %s", code, b)
	}

	// The CLI, on the node's machine, tries the path, is refused, and
	// uploads the rest.
	code, out := n.cli("models", "import", outside, "--id", "uploaded")
	if code != 0 || !strings.Contains(out, "resuming there") || !strings.Contains(out, "imported uploaded from "+outside+" by upload") {
		t.Fatalf("skulk models import %s: exit %d:\n%s", outside, code, out)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Fatalf("the partial upload stayed after the import: %v", err)
	}
	if m := n.catalogEntries()["uploaded"]; !m.Installed || m.StorageBytes != storiesStorage {
		t.Fatalf("uploaded model %+v", m)
	}

	// The uploaded bytes are the built-in model's: greedy, both say the
	// same.
	if got, want := n.placeAndComplete("uploaded"), n.placeAndComplete("stories260k"); got != want || got == "" {
		t.Fatalf("the uploaded model says %q, the built-in one %q", got, want)
	}
}

// placeAndComplete places model, waits until it is ready and returns its
// greedy 48-token continuation of "Once upon a time".
func (n *node) placeAndComplete(model string) string {
	n.t.Helper()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": model})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if code != 200 || json.Unmarshal(b, &placed) != nil {
		n.t.Fatalf("place %s: %d %s", model, code, b)
	}
	n.waitStatus(placed.InstanceID, "ready")
	code, b = n.do("POST", "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0})
	var doc struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(b, &doc) != nil || len(doc.Choices) != 1 {
		n.t.Fatalf("completion of %s: %d %s", model, code, b)
	}
	return doc.Choices[0].Text
}
