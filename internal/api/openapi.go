package api

import (
	"net/http"
	"strconv"

	"github.com/parley-chat/parley/internal/api/openapi"
)

// openapiDoc serves GET /api/v1/openapi.json: the OpenAPI 3.1 document of
// every route (internal/api/openapi), as it is in the repository.
func (s *Server) openapiDoc(w http.ResponseWriter, _ *http.Request) {
	doc := openapi.Document()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(doc)))
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(doc)
}
