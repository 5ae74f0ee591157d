package gateway

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// A task whose instance runs on another node travels on the data plane: the
// owner node opens one stream to the node of the instance's first rank,
// sends the task, and reads the chunks back on the same stream. Closing the
// stream (the client left) cancels the task there.
//
//	→ {"task": ID, "instance": ID, "payload": {...}, "trace"?: {"id", "parent"}}
//	← chunk… (JSON, one per frame, the last of kind done or error)
//
// A traced task (one whose frame carries "trace") has the spans the node
// recorded for it on its last chunk, in a "spans" field the owner takes off
// before the chunk goes on.
//
// Frames are a 4-byte big-endian length and a JSON document.

// maxDataFrame bounds one frame (a request body is limited far below it).
const maxDataFrame = 16 << 20

type taskFrame struct {
	Task     ids.TaskID          `json:"task"`
	Instance ids.InstanceID      `json:"instance"`
	Payload  request.TaskPayload `json:"payload"`
	// Trace, on a traced task, names its trace and the owner's span the
	// node's spans belong to.
	Trace *trace.Remote `json:"trace,omitempty"`
}

// chunkFrame is a chunk as it crosses the data plane: a traced task's last
// one carries the spans of the node that ran it.
type chunkFrame struct {
	request.Chunk
	Spans []trace.Span `json:"spans,omitempty"`
}

func writeJSONFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readJSONFrame(r io.Reader, v any) error { return readJSONFrameMax(r, v, maxDataFrame) }

// readJSONFrameMax is readJSONFrame for frames of at most max bytes.
func readJSONFrameMax(r io.Reader, v any, max uint32) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > max {
		return fmt.Errorf("gateway: data frame of %d bytes exceeds %d", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// LocalServe runs a task on this node (the worker's Serve).
type LocalServe func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error)

// ServeTask answers one data-plane stream from an owner node: it runs the
// task it carries with serve and streams the chunks back. The owner closing
// its side cancels the task. A traced task's spans, recorded on this node
// (node), go back on its last chunk.
func ServeTask(ctx context.Context, st io.ReadWriteCloser, node ids.NodeID, serve LocalServe) error {
	defer st.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	br := bufio.NewReader(st)
	var t taskFrame
	if err := readJSONFrame(br, &t); err != nil {
		return err
	}
	// The owner sends nothing more: a read that returns means it closed
	// the stream or went away, and the task is cancelled.
	go func() {
		var b [1]byte
		br.Read(b[:])
		cancel()
	}()
	w := bufio.NewWriter(st)
	send := func(c request.Chunk) error {
		if err := writeJSONFrame(w, c); err != nil {
			return err
		}
		return w.Flush()
	}
	var rec *trace.Recorder
	if t.Trace != nil && trace.ValidID(t.Trace.ID) {
		rec = trace.NewRecorder(t.Trace.ID, string(node))
		ctx = trace.WithScope(ctx, trace.Scope{Rec: rec, Parent: t.Trace.Parent})
	}
	chunks, err := serve(ctx, t.Instance, t.Task, t.Payload)
	if err != nil {
		ie, ok := err.(*fault.Error)
		if !ok {
			ie = fault.Errorf(fault.ClassInternal, "%v", err)
		}
		return send(request.Chunk{Kind: request.ChunkError, Error: ie})
	}
	for c := range chunks {
		if rec != nil && (c.Kind == request.ChunkDone || c.Kind == request.ChunkError) {
			// The worker recorded its spans before it passed the last chunk on.
			if err := writeJSONFrame(w, chunkFrame{Chunk: c, Spans: rec.Spans()}); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			continue
		}
		if err := send(c); err != nil {
			return err // the owner is gone; cancel ends the task
		}
	}
	return nil
}

// Remote hands tasks to other nodes over the data plane.
type Remote struct {
	// Dial opens a data-plane stream to a node.
	Dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)
	// wg counts the streams' reader goroutines; Wait waits for them.
	wg sync.WaitGroup
}

// Serve sends the task to node and returns its chunk stream, which ends
// with a done or an error chunk (an error one when the node goes away
// mid-answer) unless ctx ends first. Cancelling ctx closes the stream,
// which cancels the task on node.
func (r *Remote) Serve(ctx context.Context, node ids.NodeID, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
	st, err := r.Dial(ctx, node)
	if err != nil {
		return nil, fault.Errorf(fault.ClassUnavailable, "cannot reach node %s, which runs the instance: %v; retry in a moment", node, err)
	}
	frame := taskFrame{Task: task, Instance: inst, Payload: p}
	sc := trace.ScopeFrom(ctx)
	if sc.Rec != nil {
		frame.Trace = &trace.Remote{ID: sc.Rec.ID(), Parent: sc.Parent}
	}
	if err := writeJSONFrame(st, frame); err != nil {
		st.Close()
		return nil, fault.Errorf(fault.ClassUnavailable, "cannot send the request to node %s: %v; retry in a moment", node, err)
	}
	out := make(chan request.Chunk, 1)
	tap := request.TapFrom(ctx)
	r.wg.Go(func() {
		defer tap.Done()
		defer close(out)
		defer st.Close()
		stop := context.AfterFunc(ctx, func() { st.Close() })
		defer stop()
		br := bufio.NewReader(st)
		for {
			var f chunkFrame
			err := readJSONFrame(br, &f)
			c := f.Chunk
			if len(f.Spans) > 0 {
				sc.Rec.Merge(f.Spans...) // nil (no trace asked for) records nothing
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				c = request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassUnavailable,
					"node %s, which ran the request, went away before the answer was complete: %v", node, err)}
			}
			tap.Observe(&c)
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
			if c.Kind == request.ChunkDone || c.Kind == request.ChunkError {
				return
			}
		}
	})
	return out, nil
}

// Wait waits until every stream Serve opened has ended.
func (r *Remote) Wait() { r.wg.Wait() }
