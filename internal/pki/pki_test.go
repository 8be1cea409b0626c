package pki

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

// mustIdentity makes credentials for node id of cluster signed by ca.
func mustIdentity(t *testing.T, ca *CA, cluster, id string) *Identity {
	t.Helper()
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(cluster, id, key.Public(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	ident, err := NewIdentity(keyDER, cert, ca.CertDER)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

func mustCA(t *testing.T, cluster string) *CA {
	t.Helper()
	ca, err := NewCA(cluster, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestCA_Issue(t *testing.T) {
	ca := mustCA(t, "c1")
	id := mustIdentity(t, ca, "c1", "n2")
	if id.NodeID != "n2" || id.ClusterID != "c1" {
		t.Fatalf("identity names %s of %s", id.NodeID, id.ClusterID)
	}
	again, err := ParseCA(ca.CertDER, ca.KeyDER())
	if err != nil || !again.Key.Equal(ca.Key) {
		t.Fatalf("the CA does not round-trip: %v", err)
	}
	other := mustCA(t, "c1")
	key, _ := NewKey()
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	cert, _ := ca.Issue("c1", "n3", key.Public(), time.Now())
	if _, err := NewIdentity(keyDER, cert, other.CertDER); err == nil {
		t.Error("credentials with another CA's certificate accepted")
	}
	wrongKey, _ := NewKey()
	wrongDER, _ := x509.MarshalPKCS8PrivateKey(wrongKey)
	if _, err := NewIdentity(wrongDER, cert, ca.CertDER); err == nil {
		t.Error("a certificate for another key accepted")
	}
}

func TestVerifyPeer(t *testing.T) {
	ca := mustCA(t, "c1")
	me := mustIdentity(t, ca, "c1", "n1")
	peer := mustIdentity(t, ca, "c1", "n2")
	foreign := mustIdentity(t, mustCA(t, "c1"), "c1", "n2")
	otherCluster := mustIdentity(t, ca, "c2", "n2")
	chain := func(id *Identity) []*x509.Certificate {
		var out []*x509.Certificate
		for _, der := range id.Cert.Certificate {
			c, _ := x509.ParseCertificate(der)
			out = append(out, c)
		}
		return out
	}
	revoked := Fingerprint(peer.Cert.Certificate[0])
	member := Source{Identity: func() *Identity { return me }, Revoked: func(fp string) bool { return fp == revoked }}
	joiner := func(pin string) Source {
		return Source{Identity: func() *Identity { return nil }, Pin: func() string { return pin }}
	}
	for _, c := range []struct {
		name  string
		src   Source
		chain []*x509.Certificate
		want  string // "" accepted, else part of the error
	}{
		{"no certificate (a candidate)", member, nil, ""},
		{"a member", Source{Identity: member.Identity}, chain(peer), ""},
		{"revoked", member, chain(peer), "revoked"},
		{"another CA", member, chain(foreign), "not from this cluster's CA"},
		{"another cluster", member, chain(otherCluster), "for cluster"},
		{"joiner, pin matches", joiner(Pin(ca.Cert)), chain(peer), ""},
		{"joiner, pin differs", joiner(Pin(ca.Cert)), chain(foreign), "does not match"},
	} {
		err := verifyPeer(c.src, c.chain, time.Now())
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestClusterTLS_Handshake(t *testing.T) {
	ca := mustCA(t, "c1")
	server, client := mustIdentity(t, ca, "c1", "n1"), mustIdentity(t, ca, "c1", "n2")
	srv := ClusterTLS(Source{Identity: func() *Identity { return server }})
	cli := ClusterTLS(Source{Identity: func() *Identity { return client }})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			got <- err.Error()
			return
		}
		id, ok := PeerNode(tc.ConnectionState())
		if !ok {
			id = "(none)"
		}
		got <- id
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id := <-got; id != "n2" {
		t.Fatalf("the server saw %q", id)
	}
}

func TestParseToken(t *testing.T) {
	tok, err := NewToken(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseToken(" " + tok.String() + "\n")
	if err != nil || back != tok {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	if !SecretMatches(tok.Secret, HashSecret(tok.Secret)) || SecretMatches(tok.Secret+"0", HashSecret(tok.Secret)) {
		t.Fatal("secret hashing")
	}
	for _, bad := range []string{"", "PRLY1", "PRLY2." + strings.Repeat("a", 64) + ".aaaaaaaaaaaa." + strings.Repeat("b", 32),
		"PRLY1." + strings.Repeat("z", 64) + ".aaaaaaaaaaaa." + strings.Repeat("b", 32),
		"PRLY1." + strings.Repeat("a", 64) + ".aaaa." + strings.Repeat("b", 32)} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("%q parsed", bad)
		} else if strings.Contains(err.Error(), strings.Repeat("b", 32)) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

func TestCSR(t *testing.T) {
	key, _ := NewKey()
	der, err := CSR(key, "n4")
	if err != nil {
		t.Fatal(err)
	}
	pub, cn, err := ParseCSR(der)
	if err != nil || cn != "n4" || !key.PublicKey.Equal(pub) {
		t.Fatalf("%v %q", err, cn)
	}
	der[len(der)-5] ^= 0xff // break the signature
	if _, _, err := ParseCSR(der); err == nil {
		t.Fatal("a request with a broken signature parsed")
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("PRLY1." + strings.Repeat("a", 64) + ".aaaaaaaaaaaa." + strings.Repeat("b", 32))
	f.Add("PRLY1...")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err == nil && tok.String() != strings.TrimSpace(s) {
			t.Fatalf("%q parsed as %q", s, tok.String())
		}
	})
}

func FuzzParseCSR(f *testing.F) {
	key, _ := NewKey()
	der, _ := CSR(key, "n1")
	f.Add(der)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = ParseCSR(b)
	})
}
