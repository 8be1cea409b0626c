package ratelimit

// Names of the limits Parley enforces. Each is also the flag suffix of
// `parley serve --limit-NAME` and the name a 429 answer gives.
const (
	Posts            = "posts"              // room messages per user (rate)
	QueueSends       = "queue-sends"        // queue messages sent per user (rate)
	RoomCreates      = "room-creates"       // rooms created per user (rate)
	QueueCreates     = "queue-creates"      // queues created per user (rate)
	LinkCreates      = "link-creates"       // short links created per user (rate)
	Searches         = "searches"           // chat searches per user (rate)
	LoginsPerUser    = "logins-per-user"    // sign-in attempts per account (rate)
	LoginsPerAddress = "logins-per-address" // sign-in and sign-up attempts per client address (rate)
	Streams          = "streams"            // open WebSocket streams per user (concurrency)
	LongPolls        = "long-polls"         // queue receives waiting at once per user (concurrency)
)

// scope names what a limit counts per, for messages.
func scope(limit string) string {
	if limit == LoginsPerAddress {
		return "client address"
	}
	if limit == LoginsPerUser {
		return "account"
	}
	return "user"
}
