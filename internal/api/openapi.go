package api

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openapiJSON is the OpenAPI 3.1 document of every route of the API,
// written by hand beside the handlers: openapi_test.go fails when a route of
// the table is missing from it or it has one the table lacks, and the API
// tests check every response they get against it.
//
//go:embed openapi.json
var openapiJSON []byte

// openapiDoc serves GET /api/v1/openapi.json: the document as it is
// embedded.
func (s *Server) openapiDoc(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openapiJSON)))
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openapiJSON)
}
