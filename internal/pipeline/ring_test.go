//go:build linux

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/dataplane"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
)

// ringCapacity is each test ring's data capacity: smaller than a prefill
// object of stories260K (a 256-row chunk is 64 KiB), so large objects
// stream through the ring in pieces.
const ringCapacity = 16 << 10

// arenaFixture is one arena holding numbered rings, each with its two
// doorbells.
type arenaFixture struct {
	arena   *dataplane.Arena
	layouts []dataplane.RingLayout
	bells   [][2]*dataplane.Doorbell // readable, writable
}

func newArenaFixture(t testing.TB, rings int) *arenaFixture {
	t.Helper()
	foot := dataplane.RingFootprint(ringCapacity)
	page := uint64(os.Getpagesize())
	size := (uint64(rings)*foot + page - 1) / page * page
	a, err := dataplane.NewArena("pipeline-test", size)
	if err != nil {
		t.Fatal(err)
	}
	f := &arenaFixture{arena: a}
	for i := range rings {
		l := dataplane.NewRingLayout(dataplane.RingID(i+1), uint64(i)*foot, ringCapacity)
		if err := dataplane.InitRing(a.Bytes(), l); err != nil {
			t.Fatal(err)
		}
		var b [2]*dataplane.Doorbell
		for j := range b {
			if b[j], err = dataplane.NewDoorbell(); err != nil {
				t.Fatal(err)
			}
		}
		f.layouts = append(f.layouts, l)
		f.bells = append(f.bells, b)
	}
	t.Cleanup(func() {
		for _, b := range f.bells {
			b[0].Close()
			b[1].Close()
		}
		a.Close()
	})
	return f
}

func (f *arenaFixture) producer(t testing.TB, i int) *dataplane.Producer {
	t.Helper()
	p, err := dataplane.OpenProducer(f.arena.Bytes(), f.layouts[i], f.bells[i][0], f.bells[i][1])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *arenaFixture) consumer(t testing.TB, i int) *dataplane.Consumer {
	t.Helper()
	c, err := dataplane.OpenConsumer(f.arena.Bytes(), f.layouts[i], f.bells[i][0], f.bells[i][1])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// duplex joins both ends of one ring edge into a Link, for stages that
// share a process.
type duplex struct{ tx, rx *RingLink }

func (d duplex) Send(ctx context.Context, b []byte) error { return d.tx.Send(ctx, b) }
func (d duplex) Recv(ctx context.Context) ([]byte, error) { return d.rx.Recv(ctx) }
func (d duplex) Close() error                             { return errors.Join(d.tx.Close(), d.rx.Close()) }
func maxObject(t testing.TB, path string, chunk int) uint64 {
	return MaxObjectBytes(configOf(t, path), chunk, 0)
}

func configOf(t testing.TB, path string) model.Config {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRingLinks runs three stages in this process over data-plane rings
// and checks the reference prompts (greedy and seeded) against one shard.
func TestRingLinks(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	fx := newArenaFixture(t, 3)
	limit := maxObject(t, path, 0)
	var producers []*dataplane.Producer
	p := testPipeline(t, path, 3, Options{NewLink: func(edge, _ int) (Link, error) {
		pr := fx.producer(t, edge)
		producers = append(producers, pr)
		return duplex{
			tx: NewRingSender(pr, dataplane.EdgeID(edge), limit, dataplane.Identity{}, nil),
			rx: NewRingReceiver(fx.consumer(t, edge), dataplane.EdgeID(edge), limit, dataplane.Identity{}, nil),
		}, nil
	}})
	prompts := storiesPrompts(t)
	var reqs []Request
	var want [][]int32
	for _, pr := range prompts {
		reqs = append(reqs, Request{Prompt: pr, MaxTokens: greedyTokens})
		want = append(want, reference(t, path, pr, greedyTokens, sample.Params{}))
	}
	seeded := sample.Params{Temperature: 0.9, TopK: 20, Seed: 5}
	reqs = append(reqs, Request{Prompt: prompts[0], MaxTokens: greedyTokens, Sample: seeded})
	want = append(want, reference(t, path, prompts[0], greedyTokens, seeded))
	long := randomPrompts(9, 512, 600)[0] // three chunks, each larger than a ring
	reqs = append(reqs, Request{Prompt: long, MaxTokens: 16})
	want = append(want, reference(t, path, long, 16, sample.Params{}))
	got := generate(t, p, reqs)
	for i := range got {
		equalTokens(t, fmt.Sprintf("sequence %d", i), got[i], want[i])
	}

	// A faulted ring ends every sequence in flight.
	ctx := t.Context()
	q, err := p.Submit(ctx, Request{Prompt: prompts[1]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := producers[1].Fault(); err != nil {
		t.Fatal(err)
	}
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = q.All(bounded)
	var fe *FaultError
	if !errors.As(err, &fe) {
		t.Fatalf("after a ring fault: %v", err)
	}
	t.Logf("after the ring fault: %v", err)
}

// Two-process test: this process runs rank 0, a child process (this test
// binary again) runs rank 1 of stories260K; the two exchange objects over
// two rings in one memfd arena the child inherits.

const (
	envModel  = "PIPELINE_MODEL"
	envSplit  = "PIPELINE_SPLIT"
	envRing01 = "PIPELINE_RING01"
	envRing10 = "PIPELINE_RING10"
)

func encodeLayout(l dataplane.RingLayout) string {
	return fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d", l.RingID, l.ArenaOffset, l.TotalLen, l.HeaderOffset, l.DataOffset, l.DataCapacity, l.Alignment)
}

func decodeLayout(s string) (dataplane.RingLayout, error) {
	f := strings.Split(s, ",")
	if len(f) != 7 {
		return dataplane.RingLayout{}, fmt.Errorf("layout %q: want 7 fields", s)
	}
	var v [7]uint64
	for i := range f {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return dataplane.RingLayout{}, err
		}
		v[i] = n
	}
	return dataplane.RingLayout{RingID: dataplane.RingID(v[0]), ArenaOffset: v[1], TotalLen: v[2], HeaderOffset: v[3],
		DataOffset: v[4], DataCapacity: v[5], Alignment: uint32(v[6])}, nil
}

func runChild(role string) int {
	var err error
	switch role {
	case "last-stage":
		err = childLastStage()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childLastStage serves rank 1 of 2 until rank 0 closes the rings.
func childLastStage() error {
	arena, err := dataplane.MapArena(os.NewFile(3, "arena"))
	if err != nil {
		return err
	}
	defer arena.Close()
	var bells [4]*dataplane.Doorbell
	for i := range bells {
		if bells[i], err = dataplane.DoorbellFromFile(os.NewFile(uintptr(4+i), "doorbell")); err != nil {
			return err
		}
		defer bells[i].Close()
	}
	l01, err := decodeLayout(os.Getenv(envRing01))
	if err != nil {
		return err
	}
	l10, err := decodeLayout(os.Getenv(envRing10))
	if err != nil {
		return err
	}
	split, err := strconv.Atoi(os.Getenv(envSplit))
	if err != nil {
		return err
	}
	c, err := dataplane.OpenConsumer(arena.Bytes(), l01, bells[0], bells[1])
	if err != nil {
		return err
	}
	p, err := dataplane.OpenProducer(arena.Bytes(), l10, bells[2], bells[3])
	if err != nil {
		return err
	}
	f, err := gguf.Open(os.Getenv(envModel))
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return err
	}
	sh, err := model.Load(f, model.Range{Start: split, End: cfg.NLayer, Last: true}, model.Options{Threads: 1})
	if err != nil {
		return err
	}
	defer sh.Close()
	limit := MaxObjectBytes(cfg, 0, 0)
	st, err := NewStage(StageConfig{Shard: sh, Rank: 1, Ranks: 2,
		In:  NewRingReceiver(c, 1, limit, dataplane.Identity{Run: "test", Node: "child"}, nil),
		Out: NewRingSender(p, 2, limit, dataplane.Identity{Run: "test", Node: "child"}, nil)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := st.Run(ctx); !errors.Is(err, ErrLinkClosed) {
		return fmt.Errorf("rank 1 stopped with %v, want the closed link", err)
	}
	return nil
}

func TestRingTwoProcesses(t *testing.T) {
	path, err := filepath.Abs(testFile(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	const split = 3
	fx := newArenaFixture(t, 2)
	var files []*os.File
	files = append(files, fx.arena.File())
	for _, b := range fx.bells {
		for _, d := range b {
			f, err := d.File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			files = append(files, f)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=last-stage", envModel+"="+path, envSplit+"="+strconv.Itoa(split),
		envRing01+"="+encodeLayout(fx.layouts[0]), envRing10+"="+encodeLayout(fx.layouts[1]))
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sh, err := model.Load(f, model.Range{Start: 0, End: split, First: true}, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	limit := MaxObjectBytes(sh.Config, 0, 0)
	id := dataplane.Identity{Run: "test", Node: "parent"}
	st, err := NewStage(StageConfig{Shard: sh, Rank: 0, Ranks: 2,
		Out: NewRingSender(fx.producer(t, 0), 1, limit, id, nil),
		In:  NewRingReceiver(fx.consumer(t, 1), 2, limit, id, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- st.Run(ctx) }()

	ctxGen, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prompts := storiesPrompts(t)
	seeded := sample.Params{Temperature: 0.7, TopP: 0.9, Seed: 11}
	var seqs []*Sequence
	var want [][]int32
	for i, pr := range prompts {
		sp := sample.Params{}
		if i == 0 {
			sp = seeded
		}
		q, err := st.Submit(ctxGen, Request{Prompt: pr, MaxTokens: greedyTokens, Sample: sp})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, q)
		want = append(want, reference(t, path, pr, greedyTokens, sp))
	}
	for i, q := range seqs {
		got, err := q.All(ctxGen)
		if err != nil {
			t.Fatalf("sequence %d: %v", i, err)
		}
		equalTokens(t, fmt.Sprintf("sequence %d", i), got, want[i])
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("rank 0: %v", err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("child rank 1: %v", exitErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("child rank 1 did not stop after rank 0 closed the rings")
	}
}
