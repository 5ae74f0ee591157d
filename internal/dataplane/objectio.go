package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// Object is one complete object record.
type Object struct {
	Header  ObjectHeader
	Payload []byte
}

// ObjectReader parses object records out of an ingress ring (the worker
// ingress parser of spec §32). It hands out an object only once every byte
// of it has arrived; after a failure it stays faulted and consumes nothing
// more. One goroutine uses it.
type ObjectReader struct {
	c     *Consumer
	seq   sequenceTracker
	obs   observer
	hdr   [ObjectHeaderLen]byte
	fault error
}

// NewObjectReader parses records from c against spec. logger may be nil.
func NewObjectReader(c *Consumer, edge EdgeID, spec ObjectSpec, id Identity, logger *slog.Logger) *ObjectReader {
	return &ObjectReader{c: c, seq: sequenceTracker{spec: spec, edge: edge}, obs: newObserver(logger, id)}
}

// Next returns the next complete object. Its payload reuses buf when buf is
// large enough. It returns io.EOF when the stream ended on an object
// boundary and *ObjectError (EOFMidObject) when it ended inside one.
func (r *ObjectReader) Next(ctx context.Context, buf []byte) (Object, error) {
	if r.fault != nil {
		return Object{}, r.fault
	}
	n, err := r.readFull(ctx, r.hdr[:])
	switch {
	case err == io.EOF && n == 0:
		return Object{}, io.EOF
	case err == io.EOF:
		return Object{}, r.failed(&ObjectError{Edge: r.seq.edge, Reason: EOFMidObject,
			Detail: "stream ended inside an object header"})
	case err != nil:
		return Object{}, err
	}
	h, err := DecodeObjectHeader(r.seq.edge, r.hdr[:])
	if err != nil {
		return Object{}, r.failed(err)
	}
	if err := r.seq.check(h); err != nil {
		return Object{}, r.failed(err)
	}
	// extent is bounded by the spec's MaxExtent, so this allocation is too.
	if uint64(cap(buf)) < h.Extent {
		buf = make([]byte, h.Extent)
	}
	payload := buf[:h.Extent]
	if n, err := r.readFull(ctx, payload); err == io.EOF {
		return Object{}, r.failed(&ObjectError{Edge: r.seq.edge, Object: h.ObjectID, HasID: true, Sequence: h.Sequence,
			Reason: EOFMidObject, Detail: fmt.Sprintf("stream ended after %d of %d payload bytes", n, h.Extent)})
	} else if err != nil {
		return Object{}, err
	}
	r.obs.emit(slog.LevelDebug, EventObjectLoaded, edgeAttr(r.seq.edge), ringAttr(r.c.ID()),
		objectAttr(h.ObjectID), sequenceAttr(h.Sequence), slog.Uint64("extent", h.Extent))
	return Object{Header: h, Payload: payload}, nil
}

func (r *ObjectReader) failed(err error) error {
	r.fault = err
	attrs := []slog.Attr{edgeAttr(r.seq.edge), ringAttr(r.c.ID()), componentAttr("object_reader"), errAttr(err)}
	var oe *ObjectError
	if errors.As(err, &oe) {
		attrs = append(attrs, reasonAttr(oe.Reason.String()))
		if oe.HasID {
			attrs = append(attrs, objectAttr(oe.Object), sequenceAttr(oe.Sequence))
		}
	}
	r.obs.emit(slog.LevelWarn, EventObjectFailed, attrs...)
	return err
}

// readFull fills b from the ring; io.EOF reports how much arrived first.
func (r *ObjectReader) readFull(ctx context.Context, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		span, err := r.c.Peek()
		if err != nil {
			return done, err
		}
		if len(span) == 0 {
			if err := r.c.WaitReadable(ctx); err != nil {
				return done, err
			}
			continue
		}
		n := copy(b[done:], span)
		if err := r.c.Release(n); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// ObjectWriter frames object records into an egress ring (the worker egress
// producer of spec §32). Objects larger than the ring stream through it.
// One goroutine uses it.
type ObjectWriter struct {
	p   *Producer
	seq sequenceTracker
	obs observer
	hdr [ObjectHeaderLen]byte
}

// NewObjectWriter frames records into p under spec. logger may be nil.
func NewObjectWriter(p *Producer, edge EdgeID, spec ObjectSpec, id Identity, logger *slog.Logger) *ObjectWriter {
	return &ObjectWriter{p: p, seq: sequenceTracker{spec: spec, edge: edge}, obs: newObserver(logger, id)}
}

// Write sends one object; its extent is len(payload). An object the edge
// spec forbids is refused with *ObjectError before any byte is written.
func (w *ObjectWriter) Write(ctx context.Context, id ObjectID, sequence uint64, flags uint32, payload []byte) error {
	h := ObjectHeader{ObjectID: id, Sequence: sequence, Extent: uint64(len(payload)), Flags: flags}
	if err := w.seq.check(h); err != nil {
		return err
	}
	h.Put(w.hdr[:])
	if err := w.p.Write(ctx, w.hdr[:]); err != nil {
		return err
	}
	if err := w.p.Write(ctx, payload); err != nil {
		return err
	}
	w.obs.emit(slog.LevelDebug, EventObjectProduced, edgeAttr(w.seq.edge), ringAttr(w.p.ID()),
		objectAttr(id), sequenceAttr(sequence), slog.Uint64("extent", h.Extent))
	return nil
}

// Close ends the edge's byte stream after the last object.
func (w *ObjectWriter) Close() error { return w.p.Close() }
