package forward

import (
	"context"
	"fmt"
	"io"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Master is the control plane of the leader as the server half uses it.
type Master interface {
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
	Report(ctx context.Context, source event.Source, ev event.Event) error
}

// Serve answers one stream from peer, a node the transport authenticated.
// It returns when the stream or ctx ends.
func Serve(ctx context.Context, m Master, peer ids.NodeID, st io.ReadWriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); st.Close() }()
	var h hello
	if err := readFrame(st, &h); err != nil {
		return err
	}
	switch h.Op {
	case opCommand:
		var f frame
		if err := readFrame(st, &f); err != nil {
			return err
		}
		cmd, err := event.DecodeCommand(f.Command)
		if err != nil {
			return writeFrame(st, frame{Err: toWire(err)})
		}
		evs, err := m.Execute(ctx, cmd)
		if err != nil {
			return writeFrame(st, frame{Err: toWire(err)})
		}
		out := frame{Events: [][]byte{}}
		for _, ie := range evs {
			b, err := event.EncodeIndexed(ie)
			if err != nil {
				return err
			}
			out.Events = append(out.Events, b)
		}
		return writeFrame(st, out)
	case opReport:
		var f frame
		if err := readFrame(st, &f); err != nil {
			return err
		}
		ev, err := event.DecodeEvent(f.Report)
		if err == nil {
			// The source is the authenticated peer, never what it claims.
			err = m.Report(ctx, event.Source{Role: event.RoleWorker, Node: peer}, ev)
		}
		if err != nil {
			return writeFrame(st, frame{Err: toWire(err)})
		}
		return writeFrame(st, frame{})
	}
	return fmt.Errorf("%w: unknown op %q", ErrFrame, h.Op)
}
