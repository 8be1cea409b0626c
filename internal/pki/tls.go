package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// Identity is a node's credentials on the cluster port: its key and
// certificate, and the cluster CA that every peer's certificate must chain
// to.
type Identity struct {
	ClusterID string
	NodeID    string
	// Cert is presented in every handshake: the node certificate followed by
	// the CA certificate, so a joiner can match the CA against its pin.
	Cert  tls.Certificate
	CA    *x509.Certificate
	roots *x509.CertPool
}

// NewIdentity builds an Identity from stored DER bytes (PKCS#8 key, node
// certificate, CA certificate) and checks that they belong together.
func NewIdentity(keyDER, certDER, caDER []byte) (*Identity, error) {
	key, err := ParseKey(keyDER)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("pki: node certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if !SameKey(certDER, key.Public()) {
		return nil, errors.New("pki: the node certificate does not certify the node key")
	}
	cluster, node, ok := NodeOf(leaf)
	if !ok {
		return nil, errors.New("pki: the node certificate names no node")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: leaf.NotBefore.Add(clockSkew)}); err != nil {
		return nil, fmt.Errorf("pki: the node certificate is not signed by the CA: %w", err)
	}
	return &Identity{
		ClusterID: cluster,
		NodeID:    node,
		Cert:      tls.Certificate{Certificate: [][]byte{certDER, caDER}, PrivateKey: key, Leaf: leaf},
		CA:        ca,
		roots:     roots,
	}, nil
}

// Source is what the cluster port's TLS configuration consults on every
// handshake, so that a node's credentials can arrive (by joining) and
// revocations take effect while it runs.
type Source struct {
	// Identity returns the node's credentials, nil while it has none (a
	// node still joining).
	Identity func() *Identity
	// Pin returns the CA pin of the join token while the node has no
	// Identity; the cluster it dials must present a CA with this pin.
	Pin func() string
	// Revoked reports whether a certificate (by Fingerprint) is revoked.
	// Nil means none is.
	Revoked func(fingerprint string) bool
}

// ClusterTLS returns the mutual-TLS configuration of the cluster port, for
// both accepting and dialing. Every peer certificate must chain to the
// cluster CA (no host name is checked: a certificate names a node, not an
// address), name a node, and not be revoked. An accepted peer may present
// no certificate at all: it is a joining candidate, and the transport lets
// it call nothing but join (see PeerNode).
func ClusterTLS(src Source) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequestClientCert,
		// Verification is VerifyConnection's: chain to the cluster CA, no
		// host name.
		InsecureSkipVerify: true,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if id := src.Identity(); id != nil {
				return &id.Cert, nil
			}
			return nil, errors.New("this node has not joined its cluster yet")
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if id := src.Identity(); id != nil {
				return &id.Cert, nil
			}
			return &tls.Certificate{}, nil // a candidate shows none
		},
		VerifyConnection: func(cs tls.ConnectionState) error { return verifyPeer(src, cs.PeerCertificates, time.Now()) },
	}
}

// verifyPeer checks a peer's certificate chain. An empty chain is accepted:
// only a client may send none (a server must), and the transport treats
// such a client as a candidate.
func verifyPeer(src Source, chain []*x509.Certificate, now time.Time) error {
	if len(chain) == 0 {
		return nil
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	var roots *x509.CertPool
	clusterID := ""
	if id := src.Identity(); id != nil {
		roots, clusterID = id.roots, id.ClusterID
	} else {
		pin := ""
		if src.Pin != nil {
			pin = src.Pin()
		}
		for _, c := range chain[1:] {
			if c.IsCA && Pin(c) == pin {
				roots = x509.NewCertPool()
				roots.AddCert(c)
			}
		}
		if roots == nil {
			return errors.New("the cluster's CA does not match the join token's CA pin: wrong token, or not the cluster you meant")
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: now}); err != nil {
		return fmt.Errorf("peer certificate is not from this cluster's CA: %w", err)
	}
	cluster, node, ok := NodeOf(leaf)
	if !ok {
		return errors.New("peer certificate names no node")
	}
	if clusterID != "" && cluster != clusterID {
		return fmt.Errorf("peer certificate is for cluster %q, not %q", cluster, clusterID)
	}
	if src.Revoked != nil && src.Revoked(Fingerprint(leaf.Raw)) {
		return fmt.Errorf("the certificate of node %s is revoked", node)
	}
	return nil
}

// PeerNode names the peer of an established connection from its verified
// certificate; ok is false when it presented none.
func PeerNode(cs tls.ConnectionState) (nodeID string, ok bool) {
	if len(cs.PeerCertificates) == 0 {
		return "", false
	}
	_, node, ok := NodeOf(cs.PeerCertificates[0])
	return node, ok
}
