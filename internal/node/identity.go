package node

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/pki"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/transport"
)

// JoinTokenFile is the file in the data directory where the node that
// creates a cluster writes the cluster's first join token (mode 0600).
const JoinTokenFile = "join-token"

// gossipKeySize is the AES-256 key length memberlist's keyring takes.
const gossipKeySize = 32

// pendingCreate is what a node creating a cluster keeps in its record until
// the creation command is applied, so a crash in between finishes with the
// same secrets.
type pendingCreate struct {
	CA        placement.CASecret  `json:"ca"`
	GossipKey []byte              `json:"gossip_key"`
	Token     string              `json:"token"` // the whole first join token
	TokenRec  placement.JoinToken `json:"token_rec"`
}

// clusterPKI reports whether the node runs the cluster's own mutual TLS
// (the default): neither --insecure nor the operator's certificates.
func (n *Node) clusterPKI() bool { return !n.cfg.Insecure && n.cfg.ClusterTLS == nil }

// transportSecurity returns the cluster port's TLS configuration and peer
// identification, preparing this node's credentials: loaded from its
// record, made new for a cluster it is about to create, or (joining) the
// join token's CA pin until the join gives it a certificate.
func (n *Node) transportSecurity() (*tls.Config, func(tls.ConnectionState) (string, bool), error) {
	rec := n.rec.Load()
	switch {
	case n.cfg.Insecure:
		if rec != nil && len(rec.Cert) > 0 {
			return nil, nil, errors.New("this node's cluster runs mutual TLS with its own CA: start it without --insecure")
		}
		n.log.Warn("INSECURE: the cluster port and gossip are neither authenticated nor encrypted; anyone who reaches them can read and change every piece of data (--insecure)")
		return nil, nil, nil
	case n.cfg.ClusterTLS != nil:
		return n.cfg.ClusterTLS, nil, nil
	}
	switch {
	case rec != nil && len(rec.Cert) > 0:
		id, err := pki.NewIdentity(rec.Key, rec.Cert, rec.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("this node's credentials in %s: %w", n.cfg.DataDir, err)
		}
		n.ident.Store(id)
	case rec != nil:
		return nil, nil, errors.New("this node's cluster was made with --insecure (no cluster CA): start it with --insecure, or make a new cluster")
	case n.cfg.MayCreate():
		if err := n.prepareCreate(); err != nil {
			return nil, nil, err
		}
	default:
		if n.cfg.JoinToken == "" {
			return nil, nil, errors.New("joining a cluster needs its join token: --join-token TOKEN (or PARLEY_JOIN_TOKEN), as printed by the node that created the cluster and kept in its data directory's join-token file")
		}
		tok, err := pki.ParseToken(n.cfg.JoinToken)
		if err != nil {
			return nil, nil, err
		}
		n.joinTok = tok
	}
	src := pki.Source{Identity: n.ident.Load, Pin: func() string { return n.joinTok.Pin }, Revoked: n.certRevoked}
	return pki.ClusterTLS(src), pki.PeerNode, nil
}

// prepareCreate makes the secrets of a new cluster — its id, CA, this
// node's certificate, a gossip key and the first join token — and saves
// them in a creator's record before anything is proposed.
func (n *Node) prepareCreate() error {
	now := time.Now()
	clusterID := randomID()
	ca, err := pki.NewCA(clusterID, now)
	if err != nil {
		return err
	}
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	cert, err := ca.Issue(clusterID, n.cfg.ID, key.Public(), now)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode node key: %w", err)
	}
	tok, err := pki.NewToken(pki.Pin(ca.Cert))
	if err != nil {
		return err
	}
	gossip, err := newGossipKey()
	if err != nil {
		return err
	}
	rec := &nodeRecord{
		ID:          n.cfg.ID,
		ClusterID:   clusterID,
		Incarnation: randomID(),
		MetaReplica: placement.BootstrapReplicas(n.cfg.Partitions)[0],
		Creator:     true,
		Key:         keyDER,
		Cert:        cert,
		CA:          ca.CertDER,
		GossipKeys:  [][]byte{gossip},
		Pending: &pendingCreate{
			CA:        placement.CASecret{Cert: ca.CertDER, Key: ca.KeyDER()},
			GossipKey: gossip,
			Token:     tok.String(),
			TokenRec:  placement.JoinToken{ID: tok.ID, Hash: pki.HashSecret(tok.Secret), Name: "initial", CreatedMs: now.UnixMilli()},
		},
	}
	id, err := pki.NewIdentity(rec.Key, rec.Cert, rec.CA)
	if err != nil {
		return err
	}
	if err := n.saveRecord(rec); err != nil {
		return err
	}
	n.ident.Store(id)
	return nil
}

// newGossipKey makes a random gossip key.
func newGossipKey() ([]byte, error) {
	key := make([]byte, gossipKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	return key, nil
}

// writeJoinToken writes the first join token to the data directory,
// readable by its owner only.
func (n *Node) writeJoinToken(token string) error {
	path := filepath.Join(n.cfg.DataDir, JoinTokenFile)
	if n.fs != nil {
		f, err := n.fs.Create(path, "")
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		_, err = f.Write([]byte(token + "\n"))
		return errors.Join(err, f.Close())
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// JoinToken returns the first join token of a cluster this node created,
// "" on any other node (or once the operator deleted the file).
func (n *Node) JoinToken() string {
	path := filepath.Join(n.cfg.DataDir, JoinTokenFile)
	var b []byte
	var err error
	if n.fs != nil {
		var f vfs.File
		if f, err = n.fs.Open(path); err == nil {
			b, err = io.ReadAll(f)
			_ = f.Close()
		}
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return ""
	}
	tok, err := pki.ParseToken(string(b))
	if err != nil {
		return ""
	}
	return tok.String()
}

// CreatedCluster reports whether this node created its cluster when it
// started (then JoinToken has the first join token).
func (n *Node) CreatedCluster() bool { return n.created }

// certRevoked reports whether the cluster map revokes a certificate.
func (n *Node) certRevoked(fingerprint string) bool {
	v := n.cmap.Load()
	return v != nil && v.revoked[fingerprint]
}

// dropRevoked closes the connections of nodes whose certificates the new
// map revokes and records the revocations it sees first.
func (n *Node) dropRevoked(old, cur *mapView) {
	for fp, node := range cur.revokedNodes {
		if old != nil && old.revoked[fp] {
			continue
		}
		if n.tr != nil {
			n.tr.DropPeer(node)
		}
		if old != nil {
			n.audit.Record(audit.Event{Kind: audit.KindCertRevoked, Target: node, Detail: "certificate " + fp[:16] + "… revoked: the node was removed"})
		}
	}
}

// transportRefused audits a connection the transport refused. A joining
// node refuses every handshake until it has its certificate (members start
// sending it Raft messages as soon as the map lists it): that is no attack
// and is not audited.
func (n *Node) transportRefused(r transport.Refusal) {
	if n.clusterPKI() && n.ident.Load() == nil {
		n.log.Debug("connection refused before this node joined", "remote", r.Remote, "reason", r.Reason)
		return
	}
	n.throttled(&n.heal.callRefusals, audit.Event{Kind: audit.KindCallRefused, Outcome: audit.Refused, Actor: r.Claimed, Remote: r.Remote, Detail: r.Reason})
}
