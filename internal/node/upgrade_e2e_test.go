package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestUpgradeLegacyLog starts a node on a home written before the control
// plane ran on Raft (an event log of indexed events in HOME/log): its
// State becomes the first snapshot of the cluster the node founds, nothing
// is lost, and a second start does not convert again. A damaged old log
// refuses the start and says what to do.
func TestUpgradeLegacyLog(t *testing.T) {
	home := t.TempDir()
	id := ids.NodeID("0f3c7a9e-6b1d-4e5f-8a2b-9c0d1e2f3a4b")
	if err := os.WriteFile(filepath.Join(home, "node-id"), []byte(string(id)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeLegacy(t, filepath.Join(home, "log"), []event.IndexedEvent{
		{Term: 1, Index: 1, Event: event.MasterElected{Node: id, Term: 1}},
		{Term: 1, Index: 2, Event: event.NodeJoined{Node: id, AtUnixMs: 1_700_000_000_000}},
		{Term: 1, Index: 3, Event: event.TracingSet{Enabled: true}},
	})
	n := startNode(t, home)
	if !strings.Contains(n.logs.String(), "converted the home's event log of the format before Raft") {
		t.Fatalf("no word of the conversion:\n%s", n.logs)
	}
	if code, b := n.do("GET", "/state", nil); code != 200 || !strings.Contains(string(b), `"tracing":true`) {
		t.Fatalf("the old log's decision is not in the State: %d %.300s", code, b)
	}
	if code, b := n.do("POST", "/tracing", map[string]bool{"enabled": false}); code != 200 {
		t.Fatalf("the upgraded node does not decide: %d %s", code, b)
	}
	n.stop()
	n = startNode(t, home)
	if strings.Contains(n.logs.String(), "converted the home's event log") {
		t.Fatal("the second start converted the old log again")
	}
	if code, b := n.do("GET", "/state", nil); code != 200 || !strings.Contains(string(b), `"tracing":false`) {
		t.Fatalf("after the restart: %d %.300s", code, b)
	}
	n.stop()

	// A damaged old log: the node refuses to start empty over it.
	broken := t.TempDir()
	writeLegacy(t, filepath.Join(broken, "log"), []event.IndexedEvent{
		{Term: 1, Index: 1, Event: event.TracingSet{Enabled: true}}, // no election first: does not replay
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, skulkBin, "run", "--home", broken, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns").CombinedOutput()
	out := string(b)
	if err == nil || !strings.Contains(out, "format before Raft") || !strings.Contains(out, "move") {
		t.Fatalf("a node on an old log it cannot replay: %v\n%s", err, out)
	}
}

func writeLegacy(t *testing.T, dir string, evs []event.IndexedEvent) {
	t.Helper()
	l, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, ie := range evs {
		b, err := event.EncodeIndexed(ie)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(uint64(ie.Index), b); err != nil {
			t.Fatal(err)
		}
	}
}
