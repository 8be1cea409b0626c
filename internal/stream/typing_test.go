package stream

import (
	"testing"
	"time"
)

func TestTypingLimit(t *testing.T) {
	var l typingLimit
	now := time.Unix(100, 0)
	if !l.allow("ann", "r", now) || l.allow("ann", "r", now.Add(500*time.Millisecond)) {
		t.Fatal("a second typing frame within a second was admitted")
	}
	if !l.allow("ann", "s", now) || !l.allow("bob", "r", now) {
		t.Fatal("the limit is per user and room")
	}
	if !l.allow("ann", "r", now.Add(TypingInterval)) {
		t.Fatal("a typing frame a second later was dropped")
	}
}
