//go:build linux

package node_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/testkit"
)

// The config package restates the event log's floor (it imports only the
// standard library); they must not drift apart.
func TestLogFloorDefaultsAgree(t *testing.T) {
	if config.DefaultLogFreeFloor != eventlog.DefaultFreeSpaceFloor {
		t.Fatalf("config %d, eventlog %d", config.DefaultLogFreeFloor, eventlog.DefaultFreeSpaceFloor)
	}
}

// freeBytes is the free space of the disk holding dir.
func freeBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize)
}

// fillDisk writes a file of n bytes.
func fillDisk(t *testing.T, name string, n uint64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, uint64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			t.Fatalf("filling %s: %v", name, err)
		}
		n -= k
	}
}

// healthDoc is the persistence part of GET /state's nodeHealth.
type healthDoc struct {
	Healthy     bool     `json:"healthy"`
	Status      string   `json:"status"`
	Reasons     []string `json:"reasons"`
	Persistence []struct {
		Store, Problem, Message string
		Dir                     string `json:"dir"`
		FreeBytes               uint64 `json:"freeBytes"`
		FloorBytes              uint64 `json:"floorBytes"`
		LostAfter               uint64 `json:"lostAfter"`
	} `json:"persistence"`
}

func (n *node) health(id string) healthDoc {
	n.t.Helper()
	code, b := n.do("GET", "/state", nil)
	if code != 200 {
		n.t.Fatalf("GET /state: %d %s", code, b)
	}
	var doc struct {
		NodeHealth map[string]healthDoc `json:"nodeHealth"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		n.t.Fatal(err)
	}
	return doc.NodeHealth[id]
}

// diagHealth is this node's line of GET /v1/diagnostics/cluster.
func (n *node) diagHealth(id string) (string, []string) {
	n.t.Helper()
	code, b := n.do("GET", "/v1/diagnostics/cluster", nil)
	if code != 200 {
		n.t.Fatalf("diagnostics: %d %s", code, b)
	}
	var d struct {
		Nodes []struct {
			NodeID      string                     `json:"nodeId"`
			Health      string                     `json:"health"`
			Persistence []struct{ Message string } `json:"persistence"`
		} `json:"nodes"`
	}
	json.Unmarshal(b, &d)
	for _, nd := range d.Nodes {
		if nd.NodeID == id {
			var msgs []string
			for _, p := range nd.Persistence {
				msgs = append(msgs, p.Message)
			}
			return nd.Health, msgs
		}
	}
	n.t.Fatalf("diagnostics without node %s: %s", id, b)
	return "", nil
}

// placeWarned places the demo model and returns the instance and the
// answer's X-Skulk-Warning.
func (n *node) placeWarned() (string, string) {
	n.t.Helper()
	req, _ := http.NewRequest("POST", n.base+"/place_instance", strings.NewReader(`{"model_id":"stories260k"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		InstanceID string `json:"instance_id"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	if resp.StatusCode != 200 || r.InstanceID == "" {
		n.t.Fatalf("place: %d %+v", resp.StatusCode, r)
	}
	return r.InstanceID, resp.Header.Get("X-Skulk-Warning")
}

// TestPersistenceDegradedOnSmallDisk runs a node whose home is a small
// disk. Filling the disk under the free-space floor makes the node say so
// everywhere an operator looks: GET /state's nodeHealth (status error, the
// free bytes and the floor), the cluster diagnostics, `skulk ps`, and the
// warning header of every placement made meanwhile. Freeing the space
// brings it back by itself, and a restart keeps every placement: those
// before, during and after the degraded spell.
func TestPersistenceDegradedOnSmallDisk(t *testing.T) {
	home := testkit.TmpFS(t, "64m")
	const floor = 16 << 20
	n := startNode(t, home, "SKULK_LOG_FREE_FLOOR=16777216")
	id := nodeID(home)
	before, warn := n.placeWarned()
	if warn != "" || n.health(id).Status != "ok" {
		t.Fatalf("a roomy disk: warning %q, health %+v", warn, n.health(id))
	}

	filler := filepath.Join(home, "filler")
	fillDisk(t, filler, freeBytes(t, home)-floor/2)
	waitFor(t, 20*time.Second, "the health to report the degraded log", func() bool { return n.health(id).Status == "error" })
	h := n.health(id)
	if h.Healthy || !strings.Contains(strings.Join(h.Reasons, ","), "persistence_degraded") || len(h.Persistence) == 0 {
		t.Fatalf("health %+v", h)
	}
	p := h.Persistence[0]
	if p.Store != "event_log" || p.Problem != "degraded" || p.FloorBytes != floor || p.FreeBytes >= floor ||
		!strings.Contains(p.Message, "persistence degraded") || !strings.Contains(p.Dir, home) {
		t.Fatalf("persistence issue %+v", p)
	}
	// A node whose log stopped writing decides nothing it could not keep:
	// a change answers 503 log_not_writing, with the warning, and changes
	// nothing.
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/place_instance", `{"model_id":"stories260k"}`},
		{"DELETE", "/instance/" + before, ""},
	} {
		r, _ := http.NewRequest(req.method, n.base+req.path, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		warn := resp.Header.Get("X-Skulk-Warning")
		if resp.StatusCode != 503 || !strings.Contains(string(b), `"code":"log_not_writing"`) || !strings.Contains(warn, "persistence degraded") || !strings.Contains(warn, id) {
			t.Fatalf("%s %s while degraded: %d %s (warning %q), want 503 log_not_writing", req.method, req.path, resp.StatusCode, b, warn)
		}
	}
	if health, msgs := n.diagHealth(id); health != "error" || len(msgs) == 0 || !strings.Contains(msgs[0], "free disk space") {
		t.Fatalf("diagnostics: %s %q", health, msgs)
	}
	if _, out := n.cli("ps"); !strings.Contains(out, "warning: node "+id+": persistence degraded") || !strings.Contains(out, before) {
		t.Fatalf("skulk ps while degraded:\n%s", out)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the log to write again", func() bool { return n.health(id).Status == "ok" })
	after, warn := n.placeWarned()
	if warn != "" {
		t.Fatalf("a placement after healing carries warning %q", warn)
	}
	if _, out := n.cli("ps"); strings.Contains(out, "warning") {
		t.Fatalf("skulk ps after healing:\n%s", out)
	}
	n.waitStatus(after, "ready")
	if code, b := n.do("DELETE", "/instance/"+before, nil); code != 200 {
		t.Fatalf("delete after healing: %d %s", code, b)
	}

	if !strings.Contains(n.logs.String(), "stopped writing") {
		t.Errorf("the node's log never said the event log stopped writing")
	}
	n.stop()
	n = startNode(t, home, "SKULK_LOG_FREE_FLOOR=16777216")
	st := n.state()
	if _, ok := st.Instances[after]; !ok {
		t.Errorf("instance %s placed before the restart is gone", after)
	}
	if _, ok := st.Instances[before]; ok {
		t.Errorf("instance %s deleted before the restart is back", before)
	}
}

// records returns the end offset of the file header and of each record of
// an event log's live file (the format of internal/control/eventlog's package doc).
func records(t *testing.T, b []byte) []int {
	t.Helper()
	ends := []int{20}
	for off := 20; off+16 <= len(b); {
		off += 16 + int(binary.BigEndian.Uint32(b[off:]))
		ends = append(ends, off)
	}
	if ends[len(ends)-1] != len(b) {
		t.Fatalf("events.bin does not end on a record boundary: %v, %d bytes", ends, len(b))
	}
	return ends
}

// TestDamagedLogRestart damages a real node's event log (one flipped byte
// in the file header, a record's length, index, payload or CRC, the last
// record) and restarts the node on it. The node always serves, from the
// log's good part; it never rolls back silently: its health is an error
// ("history lost after index N"), the damaged file is kept aside, and
// `skulk doctor` says the same, until the operator acknowledges it with
// `skulk doctor --ack-log-loss`, after which the node is healthy and stays
// so across a restart.
func TestDamagedLogRestart(t *testing.T) {
	pristine := t.TempDir()
	n := startNode(t, pristine)
	id := nodeID(pristine)
	for range 3 {
		n.placeWarned()
	}
	n.stop()
	live := filepath.Join(pristine, "raft", "events.bin")
	full, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	ends := records(t, full)
	if len(ends) < 6 {
		t.Fatalf("only %d records to damage", len(ends)-1)
	}
	mid := ends[len(ends)/2] // the start of a record in the middle
	// Records are numbered from the live file's base (the raft log starts a
	// live file after its founding snapshot).
	base := binary.BigEndian.Uint64(full[8:16])
	tests := []struct {
		name string
		pos  int
		keep int // records before the damage
	}{
		{"file_header", 3, 0},
		{"length", mid + 2, len(ends) / 2},
		{"index", mid + 11, len(ends) / 2},
		{"payload", mid + 18, len(ends) / 2},
		{"crc", ends[len(ends)/2+1] - 1, len(ends) / 2},
		{"last_record", len(full) - 6, len(ends) - 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if out, err := exec.Command("cp", "-a", pristine+"/.", home).CombinedOutput(); err != nil {
				t.Fatalf("copy the home: %v %s", err, out)
			}
			b := append([]byte(nil), full...)
			b[tt.pos] ^= 0x40
			if err := os.WriteFile(filepath.Join(home, "raft", "events.bin"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			n := startNode(t, home)
			h := n.health(id)
			if h.Status != "error" || !strings.Contains(strings.Join(h.Reasons, ","), "history_lost") || len(h.Persistence) != 1 ||
				h.Persistence[0].LostAfter != base-1+uint64(tt.keep) || !strings.Contains(h.Persistence[0].Message, "skulk doctor --ack-log-loss") {
				t.Fatalf("health after damage at %d: %+v", tt.pos, h)
			}
			if !strings.Contains(n.logs.String(), "the event log lost history") {
				t.Fatalf("the node's log does not say the event log lost history")
			}
			saved, _ := filepath.Glob(filepath.Join(home, "raft", "events.bin.corrupt-*"))
			if len(saved) != 1 {
				t.Fatalf("damaged files kept: %v", saved)
			}
			if kept, _ := os.ReadFile(saved[0]); !bytes.Equal(kept, b) {
				t.Fatal("the damaged file was not kept as it was")
			}
			if code, out := doctor(t, home); code != 1 || !strings.Contains(out, fmt.Sprintf("lost history after index %d", base-1+uint64(tt.keep))) {
				t.Fatalf("skulk doctor: exit %d\n%s", code, out)
			}
			if i > 0 && i < len(tests)-1 {
				return // the acknowledgement is the same after any damage
			}
			if code, out := doctor(t, home, "--ack-log-loss"); code != 0 || !strings.Contains(out, "acknowledged") {
				t.Fatalf("skulk doctor --ack-log-loss: exit %d\n%s", code, out)
			}
			waitFor(t, 20*time.Second, "the node to take the acknowledgement", func() bool { return n.health(id).Status == "ok" })
			inst, _ := n.placeWarned()
			n.stop()
			n = startNode(t, home)
			if h := n.health(id); h.Status != "ok" {
				t.Fatalf("health after the acknowledged restart: %+v", h)
			}
			if _, ok := n.state().Instances[inst]; !ok {
				t.Fatal("a placement made after the acknowledgement did not survive a restart")
			}
		})
	}
}

// doctor runs `skulk doctor --home home` with args.
func doctor(t *testing.T, home string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(skulkBin, append([]string{"doctor", "--home", home}, args...)...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestImportOnFullDisk imports a model onto a models directory too small
// for it: the answer is 507 and names the disk, its free bytes and the
// import that needed them, not a generic 500.
func TestImportOnFullDisk(t *testing.T) {
	models := testkit.TmpFS(t, "512k")
	imports := t.TempDir()
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(imports, "stories.gguf")
	if err := os.WriteFile(src, good, 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, t.TempDir(), "SKULK_OFFLINE=1", "SKULK_MODELS_DIR="+models, "SKULK_IMPORT_DIRS="+imports)
	code, b := n.do("POST", "/models/import", map[string]any{"path": src, "id": "too-big"})
	var doc struct {
		Error struct{ Message, Code string } `json:"error"`
	}
	json.Unmarshal(b, &doc)
	if code != 507 || doc.Error.Code != "insufficient_storage" || !strings.Contains(doc.Error.Message, "disk full") ||
		!strings.Contains(doc.Error.Message, models) || !strings.Contains(doc.Error.Message, "bytes free") ||
		!strings.Contains(doc.Error.Message, "importing model too-big") {
		t.Fatalf("import onto a full disk: %d %s", code, b)
	}
	if m, ok := n.catalogEntries()["too-big"]; ok {
		t.Fatalf("a model that did not fit is in the catalog: %+v", m)
	}
}
