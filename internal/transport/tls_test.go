package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// mustCA creates a self-signed CA.
func mustCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// mustTLSConfig issues a node certificate for 127.0.0.1 signed by ca and
// returns a mutual-TLS configuration trusting ca only.
func (ca *testCA) mustTLSConfig(t testing.TB, name string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      ca.pool,
		ClientCAs:    ca.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

func TestTransport_TLS(t *testing.T) {
	ca, other := mustCA(t, "parley-ca"), mustCA(t, "rogue-ca")
	withTLS := func(cfg *tls.Config) func(*Config) { return func(c *Config) { c.TLS = cfg } }
	ha, hb := newTestHandler(), newTestHandler()
	a := mustNew(t, node{id: "a", cluster: "c1"}, ha, withTLS(ca.mustTLSConfig(t, "a")))
	b := mustNew(t, node{id: "b", cluster: "c1"}, hb, withTLS(ca.mustTLSConfig(t, "b")))
	rogue := mustNew(t, node{id: "r", cluster: "c1"}, newTestHandler(), withTLS(other.mustTLSConfig(t, "r")))
	plain := mustNew(t, node{id: "p", cluster: "c1"}, newTestHandler())

	t.Run("peers of one CA talk", func(t *testing.T) {
		if got := mustCall(t, a, b.Addr(), "echo", []byte("secret")); string(got) != "secret" {
			t.Fatalf("got %q", got)
		}
		a.SendRaft(b.Addr(), testMessages(10))
		poll.Until(t, 2*time.Second, "raft over TLS", func() bool { return hb.count() == 10 })
		if err := a.SendSnapshot(t.Context(), b.Addr(), snapMsg(), writeInPieces(randomBytes(300<<10))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("peer of another CA is refused both ways", func(t *testing.T) {
		mustErrorIs(t, callErr(rogue, a.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(a, rogue.Addr()), ErrUnreachable)
		if ha.count() != 0 {
			t.Fatalf("a received raft messages")
		}
	})
	t.Run("plaintext peer is refused both ways", func(t *testing.T) {
		mustErrorIs(t, callErr(plain, a.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(a, plain.Addr()), ErrUnreachable)
	})
}
