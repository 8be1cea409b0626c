package api

import "net/http"

// ClusterEvent is one recent event of the cluster: a node suspected, dead,
// alive again or gone, a replica added, promoted, demoted or removed, a
// leader moved, a drain started or finished.
type ClusterEvent struct {
	// Ts is when the event was recorded, in Unix milliseconds.
	Ts   int64  `json:"ts"`
	Kind string `json:"kind"`
	// Node is the node the event is about ("" when none).
	Node string `json:"node"`
	// Group is the partition (or 0, the metadata group) concerned.
	Group  uint64 `json:"group"`
	Detail string `json:"detail"`
}

// ClusterEvents is the body of GET /api/v1/cluster/events.
type ClusterEvents struct {
	Events []ClusterEvent `json:"events"`
}

// clusterEvents serves GET /api/v1/cluster/events (any signed-in user, like
// GET /api/v1/cluster).
func (s *Server) clusterEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := s.admin.ClusterEvents(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if evs == nil {
		evs = []ClusterEvent{}
	}
	writeJSON(w, http.StatusOK, ClusterEvents{Events: evs})
}
