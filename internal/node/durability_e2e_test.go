//go:build linux

package node_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/eventlog"
)

// The config package restates the event log's floor (it imports only the
// standard library); they must not drift apart.
func TestLogFloorDefaultsAgree(t *testing.T) {
	if config.DefaultLogFreeFloor != eventlog.DefaultFreeSpaceFloor {
		t.Fatalf("config %d, eventlog %d", config.DefaultLogFreeFloor, eventlog.DefaultFreeSpaceFloor)
	}
}

// smallDisk mounts a tmpfs of size bytes as a fresh directory and returns
// it; the test skips where mounting is not allowed.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("mounting a tmpfs needs root (euid %d)", os.Geteuid())
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mount -t tmpfs -o size=%s: %v", size, err)
	}
	// Registered after TempDir's cleanup, so it runs first.
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
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
	home := smallDisk(t, "64m")
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
	during, warn := n.placeWarned()
	if !strings.Contains(warn, "persistence degraded") || !strings.Contains(warn, id) {
		t.Fatalf("a placement while degraded carries warning %q", warn)
	}
	if health, msgs := n.diagHealth(id); health != "error" || len(msgs) == 0 || !strings.Contains(msgs[0], "free disk space") {
		t.Fatalf("diagnostics: %s %q", health, msgs)
	}
	if _, out := n.cli("ps"); !strings.Contains(out, "warning: node "+id+": persistence degraded") || !strings.Contains(out, during) {
		t.Fatalf("skulk ps while degraded:\n%s", out)
	}
	if code, b := n.do("DELETE", "/instance/"+before, nil); code != 200 {
		t.Fatalf("delete while degraded: %d %s", code, b)
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

	if !strings.Contains(n.logs.String(), "stopped writing") {
		t.Errorf("the node's log never said the event log stopped writing")
	}
	n.stop()
	n = startNode(t, home, "SKULK_LOG_FREE_FLOOR=16777216")
	st := n.state()
	for _, inst := range []string{during, after} {
		if _, ok := st.Instances[inst]; !ok {
			t.Errorf("instance %s placed before the restart is gone", inst)
		}
	}
	if _, ok := st.Instances[before]; ok {
		t.Errorf("instance %s deleted while degraded is back", before)
	}
}
