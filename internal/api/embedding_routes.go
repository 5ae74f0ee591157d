package api

// embeddingRoutes registers the routes of embeddings: POST /v1/embeddings.
func (s *server) embeddingRoutes() {}
