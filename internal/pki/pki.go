// Package pki is a Parley cluster's own public-key infrastructure: the
// cluster CA made by the node that creates a cluster, node certificates that
// name their node, join tokens that pin the CA, and the mutual-TLS
// configuration of the cluster port built on them. It uses only the
// standard library's crypto; nothing here is replicated state (see DESIGN.md).
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// uriScheme is the scheme of the URI SAN that names a node in its
// certificate: parley-node://CLUSTER/NODE.
const uriScheme = "parley-node"

// Validity of what the cluster CA signs. Certificates are re-issued only by
// joining again; ten years keeps them out of the way, revocation is what
// ends one early.
const (
	caValidity   = 20 * 365 * 24 * time.Hour
	nodeValidity = 10 * 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so a peer whose clock is a little behind
	// accepts a fresh certificate.
	clockSkew = time.Hour
)

// CA is a cluster's certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertDER []byte
	Key     *ecdsa.PrivateKey
}

// NewCA makes a new CA for clusterID.
func NewCA(clusterID string, now time.Time) (*CA, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Parley cluster CA " + clusterID},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	return ParseCA(der, mustMarshalKey(key))
}

// ParseCA rebuilds a CA from its certificate and PKCS#8 key, as stored.
func ParseCA(certDER, keyDER []byte) (*CA, error) {
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	key, err := ParseKey(keyDER)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertDER: certDER, Key: key}, nil
}

// KeyDER returns the CA key in PKCS#8 form.
func (ca *CA) KeyDER() []byte { return mustMarshalKey(ca.Key) }

// Issue signs a certificate naming node nodeID of cluster clusterID for pub,
// good for client and server authentication on the cluster port.
func (ca *CA) Issue(clusterID, nodeID string, pub crypto.PublicKey, now time.Time) ([]byte, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeID},
		URIs:         []*url.URL{NodeURI(clusterID, nodeID)},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(nodeValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: issue certificate for %s: %w", nodeID, err)
	}
	return der, nil
}

// NodeURI is the URI SAN naming a node of a cluster.
func NodeURI(clusterID, nodeID string) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: clusterID, Path: "/" + nodeID}
}

// NodeOf returns the cluster and node a certificate names, ok false when it
// names none (an operator's certificate without Parley's URI SAN).
func NodeOf(cert *x509.Certificate) (clusterID, nodeID string, ok bool) {
	for _, u := range cert.URIs {
		if u.Scheme == uriScheme && len(u.Path) > 1 {
			return u.Host, strings.TrimPrefix(u.Path, "/"), true
		}
	}
	return "", "", false
}

// Fingerprint is the SHA-256 of a certificate's DER bytes, in hex: how the
// cluster map names a node's certificate and revokes it.
func Fingerprint(certDER []byte) string {
	sum := sha256.Sum256(certDER)
	return hex.EncodeToString(sum[:])
}

// Pin is the SHA-256 of a CA certificate's public key (its
// SubjectPublicKeyInfo), in hex, as a join token carries it.
func Pin(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// NewKey makes a node or CA key (ECDSA P-256).
func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate key: %w", err)
	}
	return k, nil
}

// ParseKey parses a PKCS#8 ECDSA key.
func ParseKey(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("pki: private key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("pki: private key is not ECDSA")
	}
	return ek, nil
}

func mustMarshalKey(k *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic("pki: marshal an ECDSA P-256 key: " + err.Error()) // cannot happen
	}
	return b
}

// CSR makes a certificate request for nodeID signed by key: it proves the
// joiner holds the key the certificate will name.
func CSR(key *ecdsa.PrivateKey, nodeID string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: nodeID}}, key)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return der, nil
}

// ParseCSR checks a certificate request's signature and returns its public
// key and the node id it asks for.
func ParseCSR(der []byte) (crypto.PublicKey, string, error) {
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, "", fmt.Errorf("pki: certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("pki: certificate request signature: %w", err)
	}
	if _, ok := req.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, "", errors.New("pki: certificate request key is not ECDSA")
	}
	return req.PublicKey, req.Subject.CommonName, nil
}

// SameKey reports whether a certificate certifies pub.
func SameKey(certDER []byte, pub crypto.PublicKey) bool {
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return false
	}
	k, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && k.Equal(pub)
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n, nil
}
