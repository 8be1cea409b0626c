package api

import "net/http"

func redirectHandler(s *Server) http.Handler { return s.Handler() }
