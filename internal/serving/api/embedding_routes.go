package api

import (
	"context"
	"net/http"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/request"
)

// embedder is the optional Inference capability behind POST /v1/embeddings.
// Embed runs one embedding request to its end: one vector per input, or an
// error whose class says why (not_found for a model with no ready
// instance, invalid_request for a model that does not produce embeddings or
// a dimensions it cannot give).
type embedder interface {
	Embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error)
}

// embeddingRoutes registers the routes of embeddings: POST /v1/embeddings.
func (s *server) embeddingRoutes() {
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
}

func (s *server) embeddings(w http.ResponseWriter, r *http.Request) {
	e, ok := s.inference.(embedder)
	if !ok {
		s.writeStatus(w, r, http.StatusNotImplemented, fault.Errorf(fault.ClassUnavailable,
			"this node cannot serve embeddings: its backend has no embedding path"))
		return
	}
	d, ok := decodeBody(s, w, r, openai.DecodeEmbeddingRequest)
	if !ok {
		return
	}
	noteModel(r.Context(), d.Request.Model)
	res, err := e.Embed(r.Context(), d.Request)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := openai.EmbeddingResponse(d, res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, list)
}
