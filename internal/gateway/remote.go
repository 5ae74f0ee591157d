package gateway

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/infer"
)

// Tasks whose owner is another node travel on the data plane: the runner's
// node opens one stream to the owner per task, asks for the payload by task
// id and reference, then streams the chunks back on the same stream.
//
//	→ {"task": ID, "digest": HEX, "size": N}
//	← the request (JSON) | {"error": ...}
//	→ chunk… (JSON, one per frame, the last of kind done or error)
//
// Frames are a 4-byte big-endian length and a JSON document.

// maxDataFrame bounds one frame (a request body is limited far below it).
const maxDataFrame = 16 << 20

type payloadReq struct {
	Task ids.TaskID       `json:"task"`
	Ref  event.PayloadRef `json:"ref"`
}

type payloadResp struct {
	Payload *infer.TaskPayload `json:"payload,omitempty"`
	Error   string             `json:"error,omitempty"`
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

// ServeTask answers one data-plane stream from a runner's node: it hands
// over the task's payload and passes the chunks that follow to the waiting
// client.
func (g *Gateway) ServeTask(ctx context.Context, peer ids.NodeID, st io.ReadWriteCloser) error {
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	var req payloadReq
	if err := readJSONFrame(st, &req); err != nil {
		return err
	}
	r, err := g.Payload(ctx, req.Task, g.cfg.Node, req.Ref)
	if err != nil {
		return writeJSONFrame(st, payloadResp{Error: err.Error()})
	}
	if err := writeJSONFrame(st, payloadResp{Payload: &r}); err != nil {
		return err
	}
	br := bufio.NewReader(st)
	for {
		var c infer.Chunk
		if err := readJSONFrame(br, &c); err != nil {
			// The runner's node went away mid-task: end the client's stream.
			g.Deliver(ctx, req.Task, g.cfg.Node, infer.Chunk{Kind: infer.ChunkError,
				Error: infer.Errorf(infer.ClassInternal, "the node running the task went away: %v", err)})
			return err
		}
		if err := g.Deliver(ctx, req.Task, g.cfg.Node, c); err != nil {
			return err
		}
		if c.Kind == infer.ChunkDone || c.Kind == infer.ChunkError {
			return nil
		}
	}
}

// RemoteTasks is the worker's Tasks for a node that may run tasks owned by
// other nodes: local ones go to the local gateway, remote ones over a
// data-plane stream per task.
type RemoteTasks struct {
	Local *Gateway
	// Dial opens a data-plane stream to a node.
	Dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)

	mu      sync.Mutex
	streams map[ids.TaskID]*remoteTask
}

type remoteTask struct {
	st io.ReadWriteCloser
	w  *bufio.Writer
}

// Payload returns a task's request, fetching it from its owner.
func (t *RemoteTasks) Payload(ctx context.Context, task ids.TaskID, owner ids.NodeID, ref event.PayloadRef) (infer.TaskPayload, error) {
	if owner == t.Local.cfg.Node {
		return t.Local.Payload(ctx, task, owner, ref)
	}
	st, err := t.Dial(ctx, owner)
	if err != nil {
		return infer.TaskPayload{}, fmt.Errorf("gateway: reach task owner %s: %w", owner, err)
	}
	if err := writeJSONFrame(st, payloadReq{Task: task, Ref: ref}); err != nil {
		st.Close()
		return infer.TaskPayload{}, err
	}
	var resp payloadResp
	if err := readJSONFrame(st, &resp); err != nil {
		st.Close()
		return infer.TaskPayload{}, fmt.Errorf("gateway: payload of task %s from %s: %w", task, owner, err)
	}
	if resp.Payload == nil {
		st.Close()
		return infer.TaskPayload{}, errors.New(resp.Error)
	}
	t.mu.Lock()
	if t.streams == nil {
		t.streams = map[ids.TaskID]*remoteTask{}
	}
	t.streams[task] = &remoteTask{st: st, w: bufio.NewWriter(st)}
	t.mu.Unlock()
	return *resp.Payload, nil
}

// Deliver sends a chunk to the task's owner.
func (t *RemoteTasks) Deliver(ctx context.Context, task ids.TaskID, owner ids.NodeID, c infer.Chunk) error {
	if owner == t.Local.cfg.Node {
		return t.Local.Deliver(ctx, task, owner, c)
	}
	t.mu.Lock()
	rt, ok := t.streams[task]
	final := c.Kind == infer.ChunkDone || c.Kind == infer.ChunkError
	if final {
		delete(t.streams, task)
	}
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("gateway: no stream to the owner of task %s", task)
	}
	err := writeJSONFrame(rt.w, c)
	if err == nil {
		err = rt.w.Flush()
	}
	if final || err != nil {
		rt.st.Close()
	}
	return err
}
