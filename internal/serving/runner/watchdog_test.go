package runner

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// TestStoppedRunnerStalls stops a real runner (SIGSTOP) with a request in
// flight, mid-stream or before its first chunk: the stream ends with an
// error chunk naming the stall within 5 s, the runner is killed, Stall
// says why and the final status names the stall.
func TestStoppedRunnerStalls(t *testing.T) {
	for _, midStream := range []bool{true, false} {
		name := "before the first chunk"
		if midStream {
			name = "mid-stream"
		}
		t.Run(name, func(t *testing.T) {
			c := loadedClient(t, proto.LoadSpec{})
			time.Sleep(2 * proto.HeartbeatInterval) // the runner has heartbeaten
			if !midStream {
				syscall.Kill(-c.Pid(), syscall.SIGSTOP)
			}
			ch, err := c.Generate(t.Context(), "stalled", greedy("Once upon a time", 100000))
			if err != nil {
				t.Fatal(err)
			}
			if midStream {
				<-ch
				syscall.Kill(-c.Pid(), syscall.SIGSTOP)
			}
			start := time.Now()
			t.Cleanup(func() { syscall.Kill(-c.Pid(), syscall.SIGCONT) })
			r := collect(t, ch)
			took := time.Since(start)
			if r.last.Kind != request.ChunkError || r.last.Error == nil || r.last.Error.Code != client.CodeRunnerStalled {
				t.Fatalf("the stream ended with %+v, want an error chunk with code %s", r.last, client.CodeRunnerStalled)
			}
			if took > 5*time.Second {
				t.Errorf("the error came after %v, want within 5s", took)
			}
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the stalled runner was not killed")
			}
			var se *client.StallError
			if err := c.Stall(); !errors.As(err, &se) || !se.Silent {
				t.Fatalf("Stall() = %v, want a silent stall", err)
			}
			var final proto.Status
			for st := range c.Statuses() {
				final = st
			}
			if final.State != proto.StateFailed || !strings.Contains(final.Reason, "stalled") {
				t.Fatalf("final status %+v, want failed naming the stall", final)
			}
			t.Logf("error chunk after %v: %s", took, r.last.Error.Message)
		})
	}
}
