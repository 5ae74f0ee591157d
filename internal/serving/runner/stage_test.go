package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/link"
	"github.com/skulk/skulk/internal/serving/pipeline"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// startRelay serves an edge socket whose links all stay on this machine.
func startRelay(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "edge")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "edge.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &link.Relay{Logger: testLogger(), Route: func(string, int, int) (func(context.Context) (io.ReadWriteCloser, error), error) {
		return nil, nil
	}}
	go r.Serve(t.Context(), ln)
	return sock
}

func stageRanges(t *testing.T, n int) []model.Range {
	t.Helper()
	f, err := gguf.Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Split(cfg.NLayer, n)
}

// loadStages starts one runner per rank and loads them at once (each waits
// for its neighbours' links).
func loadStages(t *testing.T, sock string, n int) []*client.Client {
	t.Helper()
	ranges := stageRanges(t, n)
	clients := make([]*client.Client, n)
	errs := make(chan error, n)
	for i, r := range ranges {
		clients[i] = startClient(t, client.Options{}, "runner")
		spec := proto.LoadSpec{ModelPath: modelPath(t), Threads: 1, Start: r.Start, End: r.End, First: r.First, Last: r.Last,
			Instance: "inst", Rank: i, Pipeline: &proto.PipelineSpec{Ranks: n, Socket: sock, ConnectTimeoutMS: 30000}}
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			_, err := clients[i].Load(ctx, spec)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return clients
}

// TestPipelineRunners: stories260K split over two and three runner
// processes joined through a relay gives llama.cpp's greedy text, streamed
// as the whole-model runner streams it.
func TestPipelineRunners(t *testing.T) {
	prompt, want, promptTokens, n := reference(t)
	whole := loadedClient(t, proto.LoadSpec{})
	var wholeResults []result
	for i, c := range sameAsWholeCases() {
		r := generateAll(t, whole, fmt.Sprintf("whole-%d", i), c.req)
		if err := c.check(r); err != nil {
			t.Fatalf("%s on the whole model: %v (%+v)", c.name, err, r.chunks)
		}
		wholeResults = append(wholeResults, r)
	}
	for _, ranks := range []int{2, 3} {
		t.Run(fmt.Sprint(ranks), func(t *testing.T) {
			clients := loadStages(t, startRelay(t), ranks)
			r := generateAll(t, clients[0], "t1", greedy(prompt, n))
			if r.content != want {
				t.Fatalf("greedy text\n got %q\nwant %q", r.content, want)
			}
			if r.last.Kind != request.ChunkDone || r.last.FinishReason != request.FinishLength {
				t.Fatalf("last chunk %+v", r.last)
			}
			if u := r.last.Usage; u == nil || u.PromptTokens != promptTokens || u.CompletionTokens != n ||
				u.Timings == nil || u.Timings.PromptN != promptTokens || u.Timings.PredictedN != n || u.Timings.PromptMs <= 0 {
				t.Fatalf("usage %+v", r.last.Usage)
			}
			// Stop strings end the text as on one runner.
			req := greedy(prompt, n)
			req.Sampling.Stop = []string{"Lily"}
			r = generateAll(t, clients[0], "t2", req)
			if r.content != ", there was a little girl named " || r.last.FinishReason != request.FinishStop || r.last.StopSequence != "Lily" {
				t.Fatalf("stop: %q %+v", r.content, r.last)
			}
			// Structured output, forced tool calls, logprobs and stop
			// sequences stream exactly as on the whole model's runner.
			for i, c := range sameAsWholeCases() {
				got := generateAll(t, clients[0], fmt.Sprintf("same-%d", i), c.req)
				if !reflect.DeepEqual(untimed(got.chunks), untimed(wholeResults[i].chunks)) {
					t.Fatalf("%s: the pipeline's chunks\n%+v\nthe whole model's\n%+v", c.name, got.chunks, wholeResults[i].chunks)
				}
			}
			// A later rank takes no tasks.
			r = generateAll(t, clients[1], "t4", greedy(prompt, 4))
			if r.last.Kind != request.ChunkError {
				t.Fatalf("rank 1 took a task: %+v", r.last)
			}
		})
	}
}

// TestPipelineRunnerFault: killing a later rank's process ends rank 0's
// task with an error and rank 0's runner exits.
func TestPipelineRunnerFault(t *testing.T) {
	clients := loadStages(t, startRelay(t), 2)
	ch, err := clients[0].Generate(t.Context(), "t1", greedy("Once upon a time", 100000))
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch
	if first.Kind != request.ChunkDelta {
		t.Fatalf("first chunk %+v", first)
	}
	start := time.Now()
	if err := syscall.Kill(clients[1].Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := collect(t, ch)
	if r.last.Kind != request.ChunkError || r.last.Error.Class != fault.ClassUnavailable {
		t.Fatalf("last chunk %+v, want an unavailable error", r.last)
	}
	select {
	case <-clients[0].Done():
	case <-time.After(5 * time.Second):
		t.Fatal("rank 0's runner still runs after its pipeline failed")
	}
	t.Logf("the task ended and rank 0 exited %v after rank 1 was killed", time.Since(start))
}

// sameAsWholeCase is a task whose chunks a pipeline must give exactly as
// the whole model's runner does, and what makes the case meaningful there.
type sameAsWholeCase struct {
	name  string
	req   request.Request
	check func(result) error
}

func sameAsWholeCases() []sameAsWholeCase {
	withLogprobs := func(r request.Request, top int) request.Request {
		r.Sampling.Logprobs, r.Sampling.TopLogprobs = true, top
		return r
	}
	schema := func(r request.Request, s string) request.Request {
		r.JSONSchema = json.RawMessage(s)
		return r
	}
	stop := greedy("Once upon a time", 64)
	stop.Sampling.Stop = []string{"park"}
	forced := structuredRequest(true, 1, 2, 256)
	forced.Tools, forced.ToolChoice = weatherTools, request.ToolChoice{Mode: "required"}
	finished := func(reason string, logprobs bool) func(result) error {
		return func(r result) error {
			switch {
			case r.last.Kind != request.ChunkDone || r.last.FinishReason != reason:
				return fmt.Errorf("last chunk %+v, want finish_reason %s", r.last, reason)
			case logprobs != (len(r.logprobs) > 0):
				return fmt.Errorf("%d logprobs", len(r.logprobs))
			}
			return nil
		}
	}
	return []sameAsWholeCase{
		{"logprobs", withLogprobs(greedy("Once upon a time", 24), 5), finished(request.FinishLength, true)},
		{"stop", stop, func(r result) error {
			if r.last.StopSequence != "park" || strings.Contains(r.content, "park") {
				return fmt.Errorf("content %q, last %+v: not cut at the stop sequence", r.content, r.last)
			}
			return finished(request.FinishStop, false)(r)
		}},
		{"json_schema", schema(structuredRequest(true, 0, 1, 200), testSchemas[1].schema), func(r result) error {
			if err := validateJSON(testSchemas[1].schema, r.content); err != nil {
				return err
			}
			return finished(request.FinishStop, false)(r)
		}},
		{"json_schema_sampled_logprobs", withLogprobs(schema(structuredRequest(false, 1, 3, 200), testSchemas[1].schema), 3), finished(request.FinishStop, true)},
		{"json_object", schema(structuredRequest(false, 0, 1, 40), `{}`), finished(request.FinishLength, false)},
		{"forced_call", forced, func(r result) error {
			if len(r.calls) != 1 {
				return fmt.Errorf("%d calls", len(r.calls))
			}
			return finished(request.FinishToolCalls, false)(r)
		}},
	}
}

// untimed is chunks without what differs from run to run and runner to
// runner: the timings, and the prompt tokens a runner's prefix cache held.
func untimed(chunks []request.Chunk) []request.Chunk {
	out := slices.Clone(chunks)
	for i, c := range out {
		if c.Usage != nil {
			u := *c.Usage
			u.Timings, u.CachedTokens = nil, 0
			out[i].Usage = &u
		}
	}
	return out
}
