package api

// anthropicRoutes registers the routes of Anthropic Messages: POST /v1/messages, POST /v1/messages/count_tokens.
func (s *server) anthropicRoutes() {}
