package kv

import "strings"

// RoutingKey returns what places key on a partition: the hash tag, when the
// key has one, else the key itself. As in Redis Cluster, the tag is what
// lies between the first "{" and the first "}" after it, when that is not
// empty: "{user42}/cart" and "{user42}/orders" share a partition, so one
// transaction may hold both. A key without a tag — no "{", no "}" after
// it, or "{}" — routes by itself, exactly as before tags existed. Every kv
// call routes through it (Service.partitionOf); it is the one definition.
func RoutingKey(key string) string {
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
