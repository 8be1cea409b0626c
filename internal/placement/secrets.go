package placement

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

// The metadata group keeps the cluster's secrets beside the map, under
// their own key prefix: the CA's key, the gossip keys and the hashes of
// join tokens. They never travel in a Map (which joiners and the API are
// given), and a node refuses to serve keys under SecretPrefix to another
// node's read calls: only a node's own replica reads them.
var (
	// SecretPrefix starts every key of the metadata group's secrets.
	SecretPrefix = []byte("secret/")
	keyCA        = []byte("secret/ca")
	keyGossip    = []byte("secret/gossip")
	tokenPrefix  = []byte("secret/token/")
	// nodeCertPrefix keeps each member's certificate (public).
	nodeCertPrefix = []byte("nodecert/")
)

func nodeCertKey(id string) []byte { return append(slices.Clone(nodeCertPrefix), id...) }

func tokenKey(id string) []byte { return append(slices.Clone(tokenPrefix), id...) }

// LoadNodeCert reads the certificate (DER) a member joined with.
func LoadNodeCert(r state.Reader, id string) ([]byte, bool, error) {
	return r.Get(nodeCertKey(id))
}

// maxGossipKeys is how many gossip keys the cluster keeps: the one in use
// and the one before it, so nodes that have not seen a rotation yet still
// understand the others.
const maxGossipKeys = 2

// CASecret is the cluster CA as stored: certificate and PKCS#8 key, DER.
type CASecret struct {
	Cert []byte `json:"cert"`
	Key  []byte `json:"key"`
}

// JoinToken is what the cluster keeps of a join token: never its secret.
type JoinToken struct {
	ID string `json:"id"`
	// Hash is pki.HashSecret of the token's secret.
	Hash string `json:"hash"`
	// Name says what the token is for ("initial", or the operator's words).
	Name      string `json:"name,omitempty"`
	CreatedMs int64  `json:"created_ms"`
	// ExpiresMs is when the token stops working; 0 means when revoked.
	ExpiresMs int64 `json:"expires_ms,omitempty"`
}

// IsSecretKey reports whether a metadata key holds a secret.
func IsSecretKey(k []byte) bool { return bytes.HasPrefix(k, SecretPrefix) }

// TouchesSecrets reports whether a scan of [lo, hi) of the metadata group
// would see a secret (hi nil means to the end).
func TouchesSecrets(lo, hi []byte) bool {
	end := state.PrefixEnd(SecretPrefix)
	return bytes.Compare(lo, end) < 0 && (hi == nil || bytes.Compare(hi, SecretPrefix) > 0)
}

// LoadCA reads the cluster CA; ok is false in a cluster made without one
// (insecure, or the operator's own PKI).
func LoadCA(r state.Reader) (CASecret, bool, error) {
	var ca CASecret
	ok, err := loadJSON(r, keyCA, &ca)
	return ca, ok, err
}

// LoadGossipKeys reads the gossip keys, the one in use first.
func LoadGossipKeys(r state.Reader) ([][]byte, error) {
	var keys [][]byte
	_, err := loadJSON(r, keyGossip, &keys)
	return keys, err
}

// LoadToken reads one join token by id.
func LoadToken(r state.Reader, id string) (JoinToken, bool, error) {
	var t JoinToken
	ok, err := loadJSON(r, tokenKey(id), &t)
	return t, ok, err
}

// LoadTokens reads every join token, by id.
func LoadTokens(r state.Reader) ([]JoinToken, error) {
	var out []JoinToken
	var bad error
	err := r.Scan(tokenPrefix, state.PrefixEnd(tokenPrefix), func(_, v []byte) bool {
		var t JoinToken
		if err := json.Unmarshal(v, &t); err != nil {
			bad = fmt.Errorf("placement: corrupt join token: %w", err)
			return false
		}
		out = append(out, t)
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}

func loadJSON(r state.Reader, key []byte, v any) (bool, error) {
	b, ok, err := r.Get(key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("placement: corrupt %s: %w", key, err)
	}
	return true, nil
}

func setJSON(w state.Writer, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Set(key, b)
}

// applySecrets applies the commands that change secrets, not the map
// (handled reports false for any other). They need no cluster and are never
// fenced.
func applySecrets(w state.Writer, c Command) (res Result, handled bool, err error) {
	switch c := c.(type) {
	case AddToken:
		if c.Token.ID == "" || c.Token.Hash == "" {
			return refused(CodeInvalid, "add_token needs a token id and hash"), true, nil
		}
		if _, ok, err := LoadToken(w, c.Token.ID); err != nil || ok {
			return refused(CodeTokenExists, "a join token with this id exists"), true, err
		}
		return res, true, setJSON(w, tokenKey(c.Token.ID), c.Token)
	case RevokeToken:
		k := tokenKey(c.ID)
		if _, ok, err := w.Get(k); err != nil || !ok {
			return refused(CodeNoSuchToken, "no such join token"), true, err
		}
		return res, true, w.Delete(k)
	case RotateGossipKey:
		if len(c.Key) == 0 {
			return refused(CodeInvalid, "rotate_gossip_key needs a key"), true, nil
		}
		keys, err := LoadGossipKeys(w)
		if err != nil {
			return res, true, err
		}
		if len(keys) == 0 {
			return refused(CodeNoGossipKey, "this cluster has no gossip key to rotate (insecure)"), true, nil
		}
		keys = append([][]byte{c.Key}, keys...)
		return res, true, setJSON(w, keyGossip, keys[:min(len(keys), maxGossipKeys)])
	}
	return res, false, nil
}

// storeCreateSecrets stores the secrets a create brings, once the map was
// created.
func storeCreateSecrets(w state.Writer, c CreateCluster) error {
	if c.CA != nil {
		if err := setJSON(w, keyCA, c.CA); err != nil {
			return err
		}
	}
	if len(c.GossipKey) > 0 {
		if err := setJSON(w, keyGossip, [][]byte{c.GossipKey}); err != nil {
			return err
		}
	}
	if c.Token != nil {
		return setJSON(w, tokenKey(c.Token.ID), c.Token)
	}
	return nil
}
