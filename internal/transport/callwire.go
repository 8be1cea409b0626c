package transport

import (
	"encoding/binary"
	"time"
)

// Call frame kinds, the first byte of every frame on a 'C' connection.
const (
	kindRequest byte = 1 // id, timeout (µs, 0 = none), method, body
	kindOK      byte = 2 // id, body
	kindError   byte = 3 // id, error message
	kindCancel  byte = 4 // id: the caller gave up
	kindPing    byte = 5 // client keepalive
	kindPong    byte = 6 // server answer to a ping
)

// maxMethodLen bounds method names.
const maxMethodLen = 255

// appendControl appends a frame consisting of kind alone (ping, pong).
func appendControl(dst []byte, kind byte) []byte {
	dst = appendFrameHeader(dst, 1)
	return append(dst, kind)
}

// requestLen is the payload length of a request frame.
func requestLen(id uint64, timeout time.Duration, method string, body []byte) int {
	return 1 + uvarintLen(id) + uvarintLen(uint64(timeout.Microseconds())) +
		uvarintLen(uint64(len(method))) + len(method) + len(body)
}

// appendRequest appends a request frame.
func appendRequest(dst []byte, id uint64, timeout time.Duration, method string, body []byte) []byte {
	dst = appendFrameHeader(dst, requestLen(id, timeout, method, body))
	dst = append(dst, kindRequest)
	dst = binary.AppendUvarint(dst, id)
	dst = binary.AppendUvarint(dst, uint64(timeout.Microseconds()))
	dst = appendString(dst, method)
	return append(dst, body...)
}

// appendReply appends a response (kindOK or kindError) or, with an empty
// body, a cancel frame.
func appendReply(dst []byte, kind byte, id uint64, body []byte) []byte {
	dst = appendFrameHeader(dst, 1+uvarintLen(id)+len(body))
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, id)
	return append(dst, body...)
}
