package replica

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/skulk/skulk/internal/event"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/state"
)

// Master is the master as the server half uses it (internal/master).
type Master interface {
	Execute(ctx context.Context, cmd event.Command) ([]event.IndexedEvent, error)
	Report(ctx context.Context, source event.Source, ev event.Event) error
	Follow(ctx context.Context, after ids.Index, afterTerm ids.Term, afterMaster ids.NodeID) (*state.State, <-chan event.IndexedEvent, error)
	State(ctx context.Context) (state.State, error)
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
	case opFollow:
		return serveFollow(ctx, m, st, h)
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

// serveFollow streams the log to a follower: a snapshot when the master
// cannot continue the follower's log, then every event.
func serveFollow(ctx context.Context, m Master, st io.Writer, h hello) error {
	var (
		snap *state.State
		ch   <-chan event.IndexedEvent
		err  error
	)
	if h.Fresh {
		snap, ch, err = m.Follow(ctx, ids.Index(^uint64(0)>>1), 0, "") // no log continues this: a snapshot
	} else {
		snap, ch, err = m.Follow(ctx, ids.Index(h.After), ids.Term(h.AfterTerm), ids.NodeID(h.AfterMaster))
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(st, 64<<10)
	if snap != nil {
		b, err := state.Encode(*snap)
		if err != nil {
			return err
		}
		if err := writeFrame(w, frame{Snapshot: b}); err != nil {
			return err
		}
	}
	write := func(ie event.IndexedEvent) error {
		b, err := event.EncodeIndexed(ie)
		if err != nil {
			return err
		}
		return writeFrame(w, frame{Event: b})
	}
	for {
		if err := w.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case ie, ok := <-ch:
			if !ok {
				return nil // the follower fell behind; it reconnects from its position
			}
			if err := write(ie); err != nil {
				return err
			}
		}
		// Send what else is queued as one burst before flushing.
	burst:
		for {
			select {
			case ie, ok := <-ch:
				if !ok {
					return w.Flush()
				}
				if err := write(ie); err != nil {
					return err
				}
			default:
				break burst
			}
		}
	}
}
