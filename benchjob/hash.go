package benchjob

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
