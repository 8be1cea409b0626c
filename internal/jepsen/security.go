package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/pki"
)

// ForeignCertificate dials a cluster port with a certificate another CA
// signed, naming node id, n times; it returns how many handshakes the
// cluster accepted (its peers must refuse every one).
func ForeignCertificate(addr, id string, n int) (accepted int, err error) {
	now := time.Now()
	ca, err := pki.NewCA("another-cluster", now)
	if err != nil {
		return 0, err
	}
	key, err := pki.NewKey()
	if err != nil {
		return 0, err
	}
	certDER, err := ca.Issue("another-cluster", id, key.Public(), now)
	if err != nil {
		return 0, err
	}
	cfg := &tls.Config{
		Certificates:       []tls.Certificate{{Certificate: [][]byte{certDER}, PrivateKey: key}},
		InsecureSkipVerify: true, // the attacker does not care who answers
		MinVersion:         tls.VersionTLS13,
	}
	for range n {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			continue
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, rerr := conn.Read(make([]byte, 1))
		_ = conn.Close()
		var ne net.Error
		if rerr == nil || (errors.As(rerr, &ne) && ne.Timeout()) {
			accepted++ // the connection stayed open: the peer took the certificate
		}
	}
	return accepted, nil
}

// FloodResult is what a flood did.
type FloodResult struct {
	// Limited and Accepted count the flooder's posts refused with 429 and
	// accepted.
	Limited, Accepted int
	// VictimPosts counts the other user's posts; VictimFailed holds those
	// that failed (each retried within the retry policy).
	VictimPosts  int
	VictimFailed []error
}

// Flood has flooder post to room as fast as conc goroutines can through
// every node for d while victim posts once every 200 ms.
func Flood(flooder, victim []*client.Client, room string, conc int, d time.Duration) FloodResult {
	var lim, ok atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range conc {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := flooder[(g+n)%len(flooder)].Post(ctx, room, fmt.Sprintf("flood %d-%d", g, n), client.PostOptions{})
				cancel()
				var ce *client.Error
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &ce) && ce.Status == 429:
					lim.Add(1)
				}
			}
		})
	}
	var res FloodResult
	for n := 0; time.Now().Before(stop); n++ {
		res.VictimPosts++
		text := fmt.Sprintf("victim %d", n)
		if _, err := retry(func(ctx context.Context, attempt int) error {
			_, err := victim[(n+attempt)%len(victim)].Post(client.WithIdempotencyKey(ctx, text), room, text, client.PostOptions{})
			return err
		}); err != nil {
			res.VictimFailed = append(res.VictimFailed, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	res.Limited, res.Accepted = int(lim.Load()), int(ok.Load())
	return res
}
