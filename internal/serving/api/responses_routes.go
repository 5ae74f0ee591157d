package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/responses"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/responsestore"
)

// responsesRoutes registers the routes of OpenAI Responses: POST /v1/responses.
func (s *server) responsesRoutes() {
	store := s.cfg.Responses
	if store == nil {
		store = responsestore.New()
	}
	s.mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		s.createResponse(w, r, store)
	})
}

// history finds the conversation a request continues: in this node's
// store, else through Config.PeerResponses.
func (s *server) history(ctx context.Context, store *responsestore.Store, id string) ([]request.Message, bool) {
	if msgs, ok := store.Get(id); ok {
		return msgs, true
	}
	if s.cfg.PeerResponses == nil {
		return nil, false
	}
	return s.cfg.PeerResponses(ctx, id)
}

// POST /v1/responses
func (s *server) createResponse(w http.ResponseWriter, r *http.Request, store *responsestore.Store) {
	d, ok := decodeBody(s, w, r, responses.DecodeRequest)
	if !ok {
		return
	}
	var history []request.Message
	if id := d.PreviousResponseID; id != "" {
		if history, ok = s.history(r.Context(), store, id); !ok {
			s.writeError(w, r, fault.ParamErrorf("previous_response_id",
				"previous response %s is not known to this cluster: it was stored with store false, evicted (a node keeps its last %d responses), or the node that answered it is not reachable",
				fault.Quote(id), responses.DefaultStoreEntries))
			return
		}
	}
	req, err := responses.Continue(history, d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The task lives exactly as long as this handler: returning (the answer
	// is done, a write failed, the client left) cancels it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	chunks, err := s.generate(ctx, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	meta := responses.Meta{ID: responses.IDPrefix + s.cfg.NewID(), Model: d.Model, Created: s.cfg.Now().Unix(), PreviousResponseID: d.PreviousResponseID}
	b := responses.NewBuilder(meta, &d)
	// A finished response is stored before the client sees it end, so a
	// client that continues it at once finds it.
	finished := func() {
		if d.Store {
			// The conversation so far, without the instructions (which a
			// continuation does not inherit), then this response's output.
			conv := slices.Concat(req.Messages[len(req.Messages)-len(history)-len(d.Input):], b.Messages())
			store.Put(meta.ID, conv)
		}
	}
	if d.Stream {
		s.streamResponse(ctx, w, r, chunks, b, finished)
	} else {
		s.wholeResponse(ctx, w, r, chunks, b, finished)
	}
}

// wholeResponse answers with the whole Response object, calling finished
// when the task ends with a done chunk, before the answer is written.
func (s *server) wholeResponse(ctx context.Context, w http.ResponseWriter, r *http.Request, chunks <-chan request.Chunk, b *responses.Builder, finished func()) {
	if err, ok := collect(ctx, chunks, func(c request.Chunk) { b.Add(c) }); !ok {
		return // the client left; nobody reads an answer
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	finished()
	s.writeJSON(w, http.StatusOK, b.Response())
}

// streamResponse sends the typed events of a streamed response, calling
// finished when the task ends with a done chunk, before the last events
// are sent. Nothing is written until the
// first chunk arrives, so a task that fails at once is answered with an
// ordinary error response; a failure after that is sent as an error event
// and a response.failed event.
func (s *server) streamResponse(ctx context.Context, w http.ResponseWriter, r *http.Request, chunks <-chan request.Chunk, b *responses.Builder, finished func()) {
	rc := http.NewResponseController(w)
	started := false
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return
		}
		if c.Kind == request.ChunkError && !started {
			s.writeError(w, r, chunkError(c))
			return
		}
		var events []responses.Event
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
			events = b.Start()
		}
		if c.Kind == request.ChunkError {
			e := chunkError(c)
			s.log.Warn("http stream error", "method", r.Method, "path", r.URL.Path, "class", e.Class, "message", e.Message)
			_ = sendTypedEvents(rc, w, b.Fail(e))
			return
		}
		events = append(events, b.Add(c)...)
		if c.Kind == request.ChunkDone {
			finished()
		}
		if err := sendTypedEvents(rc, w, events); err != nil {
			return // the client left; returning cancels the task
		}
		if c.Kind == request.ChunkDone {
			return
		}
	}
}

// sendTypedEvents writes events as SSE events named by their type and
// flushes once.
func sendTypedEvents(rc *http.ResponseController, w http.ResponseWriter, events []responses.Event) error {
	if len(events) == 0 {
		return nil
	}
	var buf []byte
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		buf = append(buf, "event: "...)
		buf = append(buf, ev.EventType()...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
	}
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}
