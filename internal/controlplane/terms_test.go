package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/eventlog"
	"github.com/skulk/skulk/internal/ids"
)

// TestTermsNeverGoBack runs 100 random lives of one node, each a sequence
// of restarts: it opens its real event log and term store, becomes master
// in the term an election alone would give it (its log's term plus one),
// decides a few things, stops, and then its log is left alone, cut at a
// random byte, has a random byte flipped, or is deleted outright. Whatever
// happened, every term it leads in is above every term it led in before.
func TestTermsNeverGoBack(t *testing.T) {
	ctx := context.Background()
	damages := []string{"none", "truncate", "flip", "delete"}
	for life := range 100 {
		rng := rand.New(rand.NewPCG(uint64(life), 7))
		home := t.TempDir()
		logDir := filepath.Join(home, "log")
		var used ids.Term
		var history []string
		for step := range 6 {
			log, err := eventlog.Open(logDir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
			if err != nil {
				t.Fatalf("life %d step %d: open the log after %v: %v", life, step, history, err)
			}
			terms, err := eventlog.OpenTermStore(filepath.Join(home, "term"), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := New(Config{Node: "n1", Log: log, Terms: terms, StartedAt: time.Now(), Logger: slog.New(slog.DiscardHandler)})
			decided := c.Position().Term + 1 // an election with no one else
			if err := c.BecomeMaster(ctx, decided); err != nil {
				t.Fatalf("life %d step %d: %v", life, step, err)
			}
			term := c.Position().MasterOf
			if term <= used {
				t.Fatalf("life %d: led in term %d after term %d (decided %d, history %v)", life, term, used, decided, history)
			}
			used = term
			for k := range rng.IntN(6) {
				if _, err := c.Execute(ctx, event.SetTracingEnabled{ID: ids.CommandID(fmt.Sprintf("cmd-%d-%d", step, k)), Enabled: k%2 == 0}); err != nil {
					t.Fatal(err)
				}
			}
			c.Stop()
			log.Close()
			damage := damages[rng.IntN(len(damages))]
			history = append(history, fmt.Sprintf("term %d then %s", term, damage))
			live := filepath.Join(logDir, "events.bin")
			b, err := os.ReadFile(live)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "truncate":
				err = os.Truncate(live, int64(rng.IntN(len(b)+1)))
			case "flip":
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
				err = os.WriteFile(live, b, 0o644)
			case "delete":
				err = os.RemoveAll(logDir)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if testing.Verbose() && life == 0 {
			t.Logf("life 0: %s", strings.Join(history, ", "))
		}
	}
}
