package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Dial opens a control stream to a node.
type Dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)

// ForwardTimeout bounds one forwarded call: an answer takes at most the
// leader's commit timeout (5 s) plus the trip.
const ForwardTimeout = 7 * time.Second

// ErrNotDelivered says the leader could not be reached: nothing was asked,
// so nothing changed.
var ErrNotDelivered = errors.New("replica: the leader could not be reached")

// ErrNoAnswer says the request reached the leader but no answer came back:
// what it asked may or may not have taken effect.
var ErrNoAnswer = errors.New("replica: the leader did not answer")

// Execute asks leader to decide cmd.
func Execute(ctx context.Context, dial Dial, leader ids.NodeID, cmd event.Command) ([]event.IndexedEvent, error) {
	b, err := event.EncodeCommand(cmd)
	if err != nil {
		return nil, err
	}
	reply, err := roundTrip(ctx, dial, leader, opCommand, frame{Command: b})
	if err != nil {
		return nil, err
	}
	out := make([]event.IndexedEvent, 0, len(reply.Events))
	for _, e := range reply.Events {
		ie, err := event.DecodeIndexed(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ie)
	}
	return out, nil
}

// Report submits a worker's local fact to leader; the leader takes the
// source from the authenticated connection.
func Report(ctx context.Context, dial Dial, leader ids.NodeID, ev event.Event) error {
	b, err := event.EncodeEvent(ev)
	if err != nil {
		return err
	}
	_, err = roundTrip(ctx, dial, leader, opReport, frame{Report: b})
	return err
}

func roundTrip(ctx context.Context, dial Dial, leader ids.NodeID, op string, req frame) (frame, error) {
	ctx, cancel := context.WithTimeout(ctx, ForwardTimeout)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	st, err := dial(dctx, leader)
	dcancel()
	if err != nil {
		return frame{}, fmt.Errorf("%w (%s): %v", ErrNotDelivered, leader, err)
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	if err := writeFrame(st, hello{Op: op}); err != nil {
		return frame{}, fmt.Errorf("%w (%s): %v", ErrNotDelivered, leader, err)
	}
	if err := writeFrame(st, req); err != nil {
		return frame{}, fmt.Errorf("%w (%s): %v", ErrNoAnswer, leader, err)
	}
	var reply frame
	if err := readFrame(st, &reply); err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return frame{}, ctx.Err()
		}
		return frame{}, fmt.Errorf("%w (%s): %v", ErrNoAnswer, leader, err)
	}
	if reply.Err != nil {
		return frame{}, fromWire(reply.Err)
	}
	return reply, nil
}
