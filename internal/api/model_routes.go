package api

// modelRoutes registers the routes of model catalog management: POST /models/add, DELETE /models/{id}, GET /models/requirements, GET /models/search.
func (s *server) modelRoutes() {}
