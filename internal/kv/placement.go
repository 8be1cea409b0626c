package kv

import "github.com/parley-chat/parley/internal/partkey"

// RoutingKey returns what places key on a partition: the hash tag, when the
// key has one, else the key itself (partkey.KV, which the Go client routes
// by too). "{user42}/cart" and "{user42}/orders" share a partition, so one
// transaction may hold both. Every kv call routes through it
// (Service.partitionOf).
func RoutingKey(key string) string { return partkey.KV(key) }
