package gateway

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
)

// A task whose instance runs on another node travels on the data plane: the
// owner node opens one stream to the node of the instance's first rank,
// sends the task, and reads the chunks back on the same stream. Closing the
// stream (the client left) cancels the task there.
//
//	→ {"task": ID, "instance": ID, "payload": {...}}
//	← chunk… (JSON, one per frame, the last of kind done or error)
//
// Frames are a 4-byte big-endian length and a JSON document.

// maxDataFrame bounds one frame (a request body is limited far below it).
const maxDataFrame = 16 << 20

type taskFrame struct {
	Task     ids.TaskID        `json:"task"`
	Instance ids.InstanceID    `json:"instance"`
	Payload  infer.TaskPayload `json:"payload"`
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
type LocalServe func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p infer.TaskPayload) (<-chan infer.Chunk, error)

// ServeTask answers one data-plane stream from an owner node: it runs the
// task it carries with serve and streams the chunks back. The owner closing
// its side cancels the task.
func ServeTask(ctx context.Context, st io.ReadWriteCloser, serve LocalServe) error {
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
	send := func(c infer.Chunk) error {
		if err := writeJSONFrame(w, c); err != nil {
			return err
		}
		return w.Flush()
	}
	chunks, err := serve(ctx, t.Instance, t.Task, t.Payload)
	if err != nil {
		ie, ok := err.(*infer.Error)
		if !ok {
			ie = infer.Errorf(infer.ClassInternal, "%v", err)
		}
		return send(infer.Chunk{Kind: infer.ChunkError, Error: ie})
	}
	for c := range chunks {
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
func (r *Remote) Serve(ctx context.Context, node ids.NodeID, inst ids.InstanceID, task ids.TaskID, p infer.TaskPayload) (<-chan infer.Chunk, error) {
	st, err := r.Dial(ctx, node)
	if err != nil {
		return nil, infer.Errorf(infer.ClassUnavailable, "cannot reach node %s, which runs the instance: %v; retry in a moment", node, err)
	}
	if err := writeJSONFrame(st, taskFrame{Task: task, Instance: inst, Payload: p}); err != nil {
		st.Close()
		return nil, infer.Errorf(infer.ClassUnavailable, "cannot send the request to node %s: %v; retry in a moment", node, err)
	}
	out := make(chan infer.Chunk, 1)
	r.wg.Go(func() {
		defer close(out)
		defer st.Close()
		stop := context.AfterFunc(ctx, func() { st.Close() })
		defer stop()
		br := bufio.NewReader(st)
		for {
			var c infer.Chunk
			if err := readJSONFrame(br, &c); err != nil {
				if ctx.Err() != nil {
					return
				}
				c = infer.Chunk{Kind: infer.ChunkError, Error: infer.Errorf(infer.ClassUnavailable,
					"node %s, which ran the request, went away before the answer was complete: %v", node, err)}
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
			if c.Kind == infer.ChunkDone || c.Kind == infer.ChunkError {
				return
			}
		}
	})
	return out, nil
}

// Wait waits until every stream Serve opened has ended.
func (r *Remote) Wait() { r.wg.Wait() }
