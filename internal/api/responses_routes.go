package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/skulk/skulk/internal/api/responses"
	"github.com/skulk/skulk/internal/infer"
)

// responsesRoutes registers the routes of OpenAI Responses: POST /v1/responses.
func (s *server) responsesRoutes() {
	store := s.cfg.Responses
	if store == nil {
		store = NewResponseStore()
	}
	s.mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		s.createResponse(w, r, store)
	})
}

// ResponseStore keeps the conversations of this node's recent responses
// for previous_response_id. Request goroutines share it, and each holds mu
// only for one Get or Put (no I/O, no calls out).
type ResponseStore struct {
	mu sync.Mutex
	s  *responses.Store // guarded by mu
}

// NewResponseStore returns a store with the default bounds
// (responses.DefaultStoreEntries, responses.DefaultStoreBytes).
func NewResponseStore() *ResponseStore {
	return &ResponseStore{s: responses.NewStore(responses.DefaultStoreEntries, responses.DefaultStoreBytes)}
}

// Get returns the conversation stored under id, if this node holds it.
func (st *ResponseStore) Get(id string) ([]infer.Message, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s.Get(id)
}

func (st *ResponseStore) put(id string, msgs []infer.Message) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Put(id, msgs)
}

// history finds the conversation a request continues: in this node's
// store, else through Config.PeerResponses.
func (s *server) history(ctx context.Context, store *ResponseStore, id string) ([]infer.Message, bool) {
	if msgs, ok := store.Get(id); ok {
		return msgs, true
	}
	if s.cfg.PeerResponses == nil {
		return nil, false
	}
	return s.cfg.PeerResponses(ctx, id)
}

// POST /v1/responses
func (s *server) createResponse(w http.ResponseWriter, r *http.Request, store *ResponseStore) {
	d, ok := decodeBody(s, w, r, responses.DecodeRequest)
	if !ok {
		return
	}
	var history []infer.Message
	if id := d.PreviousResponseID; id != "" {
		if history, ok = s.history(r.Context(), store, id); !ok {
			s.writeError(w, r, infer.ParamErrorf("previous_response_id",
				"previous response %q is not known to this cluster: it was stored with store false, evicted (a node keeps its last %d responses), or made before a restart of the node that answered it",
				id, responses.DefaultStoreEntries))
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
	chunks, err := s.b.Generate(ctx, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	meta := responses.Meta{ID: responses.IDPrefix + s.cfg.NewID(), Model: d.Model, Created: s.cfg.Now().Unix(), PreviousResponseID: d.PreviousResponseID}
	b := responses.NewBuilder(meta, &d)
	if d.Stream {
		ok = s.streamResponse(ctx, w, r, chunks, b)
	} else {
		ok = s.wholeResponse(ctx, w, r, chunks, b)
	}
	if ok && d.Store {
		// The conversation so far, without the instructions (which a
		// continuation does not inherit), then this response's output.
		conv := slices.Concat(req.Messages[len(req.Messages)-len(history)-len(d.Input):], b.Messages())
		store.put(meta.ID, conv)
	}
}

// wholeResponse answers with the whole Response object and reports whether
// the task ended with a done chunk.
func (s *server) wholeResponse(ctx context.Context, w http.ResponseWriter, r *http.Request, chunks <-chan infer.Chunk, b *responses.Builder) bool {
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return false // the client left; nobody reads an answer
		}
		if c.Kind == infer.ChunkError {
			s.writeError(w, r, chunkError(c))
			return false
		}
		b.Add(c)
		if c.Kind == infer.ChunkDone {
			s.writeJSON(w, http.StatusOK, b.Response())
			return true
		}
	}
}

// streamResponse sends the typed events of a streamed response and reports
// whether the task ended with a done chunk. Nothing is written until the
// first chunk arrives, so a task that fails at once is answered with an
// ordinary error response; a failure after that is sent as an error event
// and a response.failed event.
func (s *server) streamResponse(ctx context.Context, w http.ResponseWriter, r *http.Request, chunks <-chan infer.Chunk, b *responses.Builder) bool {
	rc := http.NewResponseController(w)
	started := false
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return false
		}
		if c.Kind == infer.ChunkError && !started {
			s.writeError(w, r, chunkError(c))
			return false
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
		if c.Kind == infer.ChunkError {
			e := chunkError(c)
			s.log.Warn("http stream error", "method", r.Method, "path", r.URL.Path, "class", e.Class, "message", e.Message)
			_ = sendTypedEvents(rc, w, b.Fail(e))
			return false
		}
		events = append(events, b.Add(c)...)
		if err := sendTypedEvents(rc, w, events); err != nil {
			return false // the client left; returning cancels the task
		}
		if c.Kind == infer.ChunkDone {
			return true
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
