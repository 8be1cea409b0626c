package api

import "net/http"

// PartitionMap is the body of GET /api/v1/partitions: what a client needs
// to send each request to the node that leads its partition, saving the
// hop a node forwards other requests over. It is a hint, never a promise:
// a request sent anywhere is served, and a leader may move at any time.
type PartitionMap struct {
	// Hash names the hash from a routing key to a partition
	// ("fnv1a-64", partkey.Of); a client that does not know it must not
	// route by the map.
	Hash string `json:"hash"`
	// Partitions is the partition count: partitions are 1..Partitions.
	Partitions int `json:"partitions"`
	// Leaders holds, at index i, the advertised HTTP address (host:port)
	// of the node leading partition i+1 as the answering node knows it; ""
	// when it knows none (no leader, or a partition it holds no replica of
	// and heard nothing about).
	Leaders []string `json:"leaders"`
	// Self is the advertised HTTP address of the answering node, as
	// Leaders names it, so that a client that reached it under another
	// name knows which leader it is ("" before the node is in the map).
	Self string `json:"self,omitempty"`
}

// partitions serves GET /api/v1/partitions: any signed-in caller may
// learn where partitions are led, as every client of a partitioned store
// may (the nodes' addresses are the ones they advertise to clients).
func (s *Server) partitions(w http.ResponseWriter, r *http.Request) {
	m := s.status.PartitionMap()
	if m.Leaders == nil {
		m.Leaders = []string{}
	}
	writeJSON(w, http.StatusOK, m)
}
