package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	// HeaderDelivery carries the delivery's id (chat.DeliveryID): the
	// same on every attempt, so a receiver drops repeats by it.
	HeaderDelivery = "X-Parley-Delivery"
	// HeaderTimestamp carries the attempt's time in Unix seconds; it is
	// part of the signed text, so a captured delivery cannot be replayed
	// later than the receiver's tolerance.
	HeaderTimestamp = "X-Parley-Timestamp"
	// HeaderSignature carries "sha256=" and the lower-case hex
	// HMAC-SHA256, keyed with the hook's secret, of the timestamp, a dot
	// and the body.
	HeaderSignature = "X-Parley-Signature"
)

// Sign returns the HeaderSignature value of body sent at unix seconds ts
// with secret: "sha256=" + hex(HMAC-SHA256(secret, "<ts>.<body>")).
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(strconv.AppendInt(nil, ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: the signature does not match")
	ErrStale        = errors.New("webhook: the timestamp is outside the tolerance")
)

// Verify checks a delivery as a receiver should: the signature over the
// timestamp and body, compared in constant time, and the timestamp within
// tolerance of now. It is the reference for docs/API.md's recipe.
func Verify(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	want := Sign(secret, ts, body)
	if !strings.HasPrefix(signature, "sha256=") || !hmac.Equal([]byte(signature), []byte(want)) {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}
