package api

// ollamaRoutes registers the routes of Ollama: /api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version, /api/embed, /api/embeddings.
func (s *server) ollamaRoutes() {}
