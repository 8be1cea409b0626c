package account

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
)

// Result status bytes, the first byte of every result Apply returns.
const (
	statusOK       byte = 0 // payload depends on the command
	statusConflict byte = 1 // CreateUser: the name is taken; CreateToken: the id or digest is taken; no payload
	statusNotFound byte = 2 // CreateSession, CreateToken: no such user; DeleteSession, RevokeToken: no such session or token
	statusInvalid  byte = 3 // payload: message
	statusTooMany  byte = 4 // CreateToken: the user holds MaxTokensPerUser tokens; no payload
)

// errBadResult is the cause of result decoding errors on malformed results.
var errBadResult = errors.New("account: malformed result")

func invalidResult(err error) []byte {
	return append([]byte{statusInvalid}, err.Error()...)
}

// CreateUser OK: status, flags, created ms (8 bytes BE), name (the rest).
func userResult(u userRecord) []byte {
	b := make([]byte, 0, 10+len(u.name))
	var flags byte
	if u.admin {
		flags = flagAdmin
	}
	b = append(b, statusOK, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(u.createdMs))
	return append(b, u.name...)
}

// ClaimAdmin OK: status, holder's lowercased name (the rest).
func claimResult(holder string) []byte {
	return append([]byte{statusOK}, holder...)
}

// CreateSession OK: status, flags, expires ms (8 bytes BE), the user's
// registered name (the rest).
func sessionResult(u userRecord, expiresMs int64) []byte {
	b := make([]byte, 0, 10+len(u.name))
	var flags byte
	if u.admin {
		flags = flagAdmin
	}
	b = append(b, statusOK, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(expiresMs))
	return append(b, u.name...)
}

// resultStatus splits a result into its status and payload and turns the
// refusals every command shares into errors.
func resultStatus(res []byte) (byte, []byte, error) {
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("%w: empty", errBadResult)
	}
	if res[0] == statusInvalid {
		return 0, nil, errs.New(errs.Invalid, "rejected command: %s", res[1:])
	}
	if res[0] > statusTooMany {
		return 0, nil, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
	}
	return res[0], res[1:], nil
}

// flagsTimeName decodes the flags, 8-byte time and name payload shared by
// CreateUser and CreateSession results.
func flagsTimeName(p []byte) (admin bool, ms int64, name string, err error) {
	if len(p) < 10 || p[0]&^flagAdmin != 0 {
		return false, 0, "", fmt.Errorf("%w: payload of %d bytes", errBadResult, len(p))
	}
	return p[0]&flagAdmin != 0, int64(binary.BigEndian.Uint64(p[1:])), string(p[9:]), nil
}

// decodeUserResult decodes the result of CreateUser: errs.Conflict when the
// name is taken.
func decodeUserResult(res []byte) (userRecord, error) {
	st, p, err := resultStatus(res)
	if err != nil {
		return userRecord{}, err
	}
	switch st {
	case statusOK:
		admin, ms, name, err := flagsTimeName(p)
		return userRecord{name: name, admin: admin, createdMs: ms}, err
	case statusConflict:
		return userRecord{}, errs.New(errs.Conflict, "username is taken")
	default:
		return userRecord{}, fmt.Errorf("%w: status %d for create user", errBadResult, st)
	}
}

// decodeClaimResult decodes the result of ClaimAdmin: the seat's holder.
func decodeClaimResult(res []byte) (string, error) {
	st, p, err := resultStatus(res)
	if err != nil {
		return "", err
	}
	if st != statusOK || len(p) == 0 {
		return "", fmt.Errorf("%w: status %d, %d bytes for claim", errBadResult, st, len(p))
	}
	return string(p), nil
}

// decodeSessionResult decodes the result of CreateSession: errs.Unauthorized
// when the user no longer exists.
func decodeSessionResult(res []byte) (name string, admin bool, expiresMs int64, err error) {
	st, p, err := resultStatus(res)
	if err != nil {
		return "", false, 0, err
	}
	switch st {
	case statusOK:
		admin, ms, name, err := flagsTimeName(p)
		return name, admin, ms, err
	case statusNotFound:
		return "", false, 0, errs.New(errs.Unauthorized, "invalid username or password")
	default:
		return "", false, 0, fmt.Errorf("%w: status %d for create session", errBadResult, st)
	}
}

// decodeDeleteResult decodes the result of DeleteSession: errs.NotFound when
// there was no such session.
func decodeDeleteResult(res []byte) error {
	st, p, err := resultStatus(res)
	if err != nil {
		return err
	}
	switch {
	case len(p) != 0:
		return fmt.Errorf("%w: %d bytes of payload for delete session", errBadResult, len(p))
	case st == statusOK:
		return nil
	case st == statusNotFound:
		return errs.New(errs.NotFound, "session not found")
	default:
		return fmt.Errorf("%w: status %d for delete session", errBadResult, st)
	}
}

// CreateToken OK: status, created ms, expires ms (8 bytes BE each).
func tokenResult(t tokenRecord) []byte {
	b := binary.BigEndian.AppendUint64([]byte{statusOK}, uint64(t.createdMs))
	return binary.BigEndian.AppendUint64(b, uint64(t.expiresMs))
}

// decodeTokenResult decodes the result of CreateToken: when the token was
// created and when it expires.
func decodeTokenResult(res []byte) (createdMs, expiresMs int64, err error) {
	st, p, err := resultStatus(res)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case st == statusOK && len(p) == 16:
		return int64(binary.BigEndian.Uint64(p)), int64(binary.BigEndian.Uint64(p[8:])), nil
	case st == statusNotFound:
		return 0, 0, errs.New(errs.NotFound, "user not found")
	case st == statusTooMany:
		return 0, 0, errs.New(errs.Conflict, "a user holds at most %d API tokens: revoke one first", MaxTokensPerUser)
	case st == statusConflict:
		return 0, 0, errs.New(errs.Conflict, "token id taken; try again")
	default:
		return 0, 0, fmt.Errorf("%w: status %d, %d bytes for create token", errBadResult, st, len(p))
	}
}

// decodeRevokeTokenResult decodes the result of RevokeToken: the revoked
// token's digest, errs.NotFound when there was no such token.
func decodeRevokeTokenResult(res []byte) ([TokenHashLen]byte, error) {
	st, p, err := resultStatus(res)
	switch {
	case err != nil:
		return [TokenHashLen]byte{}, err
	case st == statusOK && len(p) == TokenHashLen:
		return [TokenHashLen]byte(p), nil
	case st == statusNotFound:
		return [TokenHashLen]byte{}, errs.New(errs.NotFound, "token not found")
	default:
		return [TokenHashLen]byte{}, fmt.Errorf("%w: status %d, %d bytes for revoke token", errBadResult, st, len(p))
	}
}

// decodeTouchResult checks the result of TouchTokens.
func decodeTouchResult(res []byte) error {
	st, _, err := resultStatus(res)
	if err == nil && st != statusOK {
		err = fmt.Errorf("%w: status %d for touch tokens", errBadResult, st)
	}
	return err
}
