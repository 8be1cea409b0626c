// Package partkey is the one definition of where a key lives: the hash from
// a routing key to its partition, and the routing key of a kv key (its hash
// tag). The servers place data by it (placement.PartitionOf, kv.RoutingKey)
// and the Go client routes requests by it (client.Pool), so a client sends
// each request to the node that leads its partition. It imports nothing of
// Parley's, so the client may use it without the server's dependencies.
package partkey
