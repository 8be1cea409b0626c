package api

import (
	"context"
	"net/http"
)

// ClusterAdmin changes the cluster's membership on an operator's request and
// reports what the cluster did lately.
type ClusterAdmin interface {
	// DrainNode marks node id draining, so the placement controller moves
	// every replica off it, and returns the moves that empties it. A drain
	// that cannot complete (some partition would have nowhere to go) is an
	// errs.Conflict saying why; an unknown node errs.NotFound.
	DrainNode(ctx context.Context, id string) ([]Move, error)
	// RemoveNode forgets a drained or dead node; another is errs.Conflict.
	RemoveNode(ctx context.Context, id string) error
	// ClusterEvents returns recent cluster events, oldest first.
	ClusterEvents(ctx context.Context) ([]ClusterEvent, error)
}

// DrainResult is the body of a 202 answer to POST
// /api/v1/cluster/nodes/{id}/drain.
type DrainResult struct {
	Node  string `json:"node"`
	Moves []Move `json:"moves"`
}

// clusterAdminRoutes registers the admin routes of the cluster.
func (s *Server) clusterAdminRoutes() {
	if s.admin == nil {
		return
	}
	s.handleAdmin("POST /api/v1/cluster/nodes/{id}/drain", "change cluster membership", s.drainNode)
	s.handleAdmin("DELETE /api/v1/cluster/nodes/{id}", "change cluster membership", s.removeNode)
	s.handleAuth("GET /api/v1/cluster/events", s.clusterEvents)
}

// drainNode serves POST /api/v1/cluster/nodes/{id}/drain (admin): 202 with
// the moves planned.
func (s *Server) drainNode(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	moves, err := s.admin.DrainNode(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if moves == nil {
		moves = []Move{}
	}
	writeJSON(w, http.StatusAccepted, DrainResult{Node: id, Moves: moves})
}

// removeNode serves DELETE /api/v1/cluster/nodes/{id} (admin).
func (s *Server) removeNode(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.admin.RemoveNode(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"node": id, "state": "removed"})
}
