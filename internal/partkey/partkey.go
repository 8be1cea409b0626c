package partkey

import (
	"hash/fnv"
	"strings"
)

// FNV1a64 names the partitioning hash Of computes, as the cluster map
// records it (placement.Map.Hash) and GET /api/v1/partitions reports it.
const FNV1a64 = "fnv1a-64"

// Of returns the partition (Raft group id, 1..partitions) that owns a
// routing key: FNV-1a 64 of the key modulo the partition count. It is
// stable across processes, machines and releases.
func Of(routingKey string, partitions int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(routingKey))
	return 1 + h.Sum64()%uint64(partitions)
}

// KV returns what places a kv key on a partition: the hash tag, when the
// key has one, else the key itself. As in Redis Cluster, the tag is what
// lies between the first "{" and the first "}" after it, when that is not
// empty: "{user42}/cart" and "{user42}/orders" share a partition, so one
// transaction may hold both. A key without a tag — no "{", no "}" after
// it, or "{}" — routes by itself, exactly as before tags existed.
func KV(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 {
		return key
	}
	return key[open+1 : open+1+n]
}

// Room returns what places a chat room on a partition: its name with
// ASCII letters in lower case, as the server folds room names
// (chat.CanonicalRoom), so "General" and "general" are one room in one
// place.
func Room(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, name)
}
