package api

// responsesRoutes registers the routes of OpenAI Responses: POST /v1/responses.
func (s *server) responsesRoutes() {}
