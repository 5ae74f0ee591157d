package event

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden files")

// checkGolden compares encoded bytes with testdata/golden/<name>.hex. A
// difference is a wire-format change: the event log and the state hash
// depend on these bytes, so review the diff before running with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".hex")
	text := hex.EncodeToString(got) + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != text {
		t.Fatalf("%s: encoding changed\n got: %s want: %s", path, text, want)
	}
}

func TestGoldenEvents(t *testing.T) {
	for name, ev := range sampleEvents() {
		t.Run(name, func(t *testing.T) {
			b := mustEncodeEvent(t, ev)
			checkGolden(t, "event_"+name, b)
			assertDecodesFromGolden(t, "event_"+name, b)
		})
	}
}

func TestGoldenCommands(t *testing.T) {
	for name, c := range sampleCommands() {
		t.Run(name, func(t *testing.T) {
			b, err := EncodeCommand(c)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "command_"+name, b)
		})
	}
}

func TestGoldenIndexed(t *testing.T) {
	b, err := EncodeIndexed(IndexedEvent{Term: 3, Index: 1024, Event: sampleEvents()["runner_status_updated"]})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "indexed_runner_status_updated", b)
}

// assertDecodesFromGolden proves the stored bytes still decode, so a change
// that breaks reading old logs fails even when -update rewrote the file.
func assertDecodesFromGolden(t *testing.T, name string, want []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := DecodeEvent(b)
	if err != nil {
		t.Fatalf("golden %s no longer decodes: %v", name, err)
	}
	if !bytes.Equal(mustEncodeEvent(t, ev), want) {
		t.Fatalf("golden %s decodes to a different event", name)
	}
}

// TestGoldenRetiredTasks: the task events of the request path that once
// went through the control plane, as old logs hold them, still decode (to
// RetiredTask, alone or at a log position) and encode back to the same
// bytes, so an old log replays and is served on unchanged.
func TestGoldenRetiredTasks(t *testing.T) {
	tests := []struct {
		golden string
		kind   Kind
	}{
		{"event_task_created", KindTaskCreated},
		{"event_task_acknowledged", KindTaskAcknowledged},
		{"event_task_cancelled", KindTaskCancelled},
		{"event_task_finished", KindTaskFinished},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", tt.golden+".hex"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := DecodeEvent(b)
			if err != nil {
				t.Fatalf("golden %s no longer decodes: %v", tt.golden, err)
			}
			if rt, ok := ev.(RetiredTask); !ok || rt.Kind() != tt.kind {
				t.Fatalf("decoded %#v, want a RetiredTask of kind %s", ev, tt.kind)
			}
			if !bytes.Equal(mustEncodeEvent(t, ev), b) {
				t.Fatalf("golden %s encodes back to other bytes", tt.golden)
			}
			ib, err := EncodeIndexed(IndexedEvent{Term: 2, Index: 9, Event: ev})
			if err != nil {
				t.Fatal(err)
			}
			ie, err := DecodeIndexed(ib)
			if err != nil || ie.Event.Kind() != tt.kind || !bytes.Equal(mustEncodeEvent(t, ie.Event), b) {
				t.Fatalf("at a log position: %+v, %v", ie, err)
			}
		})
	}
}
