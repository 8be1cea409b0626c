// Package openapi holds the OpenAPI 3.1 document of Parley's HTTP API v1
// (openapi.json), written by hand beside the handlers of internal/api,
// which serves it at GET /api/v1/openapi.json. internal/api's tests hold it
// to the route table, and they and the client's tests check every answer
// they get against it (openapitest).
package openapi

import _ "embed"

//go:embed openapi.json
var document []byte

// Document returns the document's JSON. The slice is shared: callers must
// not modify it.
func Document() []byte { return document }
