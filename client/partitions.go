package client

import (
	"context"
	"net"
	"net/url"

	"github.com/parley-chat/parley/internal/partkey"
)

// PartitionMap says where each partition is led, as one server knows it
// (GET /api/v1/partitions). It is a hint: any server serves any request,
// forwarding it to the leader, and leaders move.
type PartitionMap struct {
	// Hash names the hash from a routing key to a partition ("fnv1a-64").
	Hash string `json:"hash"`
	// Partitions is the partition count; partitions are 1..Partitions.
	Partitions int `json:"partitions"`
	// Leaders holds, at index i, the advertised HTTP address (host:port)
	// of the server leading partition i+1; "" when unknown.
	Leaders []string `json:"leaders"`
	// Self is the advertised HTTP address of the server that answered, as
	// Leaders names it ("" from a server that does not say).
	Self string `json:"self,omitempty"`
}

// Partitions returns where the server knows each partition to be led.
func (c *Client) Partitions(ctx context.Context) (*PartitionMap, error) {
	var m PartitionMap
	if _, err := c.getJSON(ctx, "/api/v1/partitions", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// LeaderOf returns the address (host:port) of the server leading the
// partition of routingKey: a queue's name, or KVRoutingKey of a kv key. It
// is "" when the map does not know, or names a hash this client does not
// compute.
func (m *PartitionMap) LeaderOf(routingKey string) string {
	if m == nil || m.Hash != partkey.FNV1a64 || !m.wellFormed() {
		return ""
	}
	return m.Leaders[partkey.Of(routingKey, m.Partitions)-1]
}

// wellFormed reports whether m names at least one partition and one leader
// slot for each; a server that knows no cluster yet answers 0 partitions.
func (m *PartitionMap) wellFormed() bool {
	return m.Partitions >= 1 && len(m.Leaders) == m.Partitions
}

// KVRoutingKey returns what places a kv key on a partition: its hash tag
// ("user42" of "{user42}/cart"), else the key itself, as the servers place
// it.
func KVRoutingKey(key string) string { return partkey.KV(key) }

// hostPort returns the host:port a base URL reaches, with the scheme's
// default port when it names none; "" when it does not parse.
func hostPort(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
