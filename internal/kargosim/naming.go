package kargosim

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// crockford is the Base32 alphabet ULIDs are written in.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const (
	// promotionShortHashLength is how much of the Freight name ends a
	// Promotion name.
	promotionShortHashLength = 7
	// maxStagePrefix keeps a Promotion name within 253 characters: the
	// prefix leaves room for two dots, a 26-character ULID and the hash.
	maxStagePrefix = 253 - 2 - 26 - promotionShortHashLength
)

// ulidSource makes ULIDs that sort in the order they were made, also within
// one millisecond (the random part is incremented, as monotonic ULID
// generators do), because Kargo orders a Stage's Promotions by name.
type ulidSource struct {
	mu      sync.Mutex
	lastMS  uint64
	lastRnd [10]byte
	entropy func([]byte)
}

func newULIDSource() *ulidSource {
	return &ulidSource{entropy: func(b []byte) { _, _ = rand.Read(b) }}
}

// make returns the ULID for the given time.
func (s *ulidSource) make(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := uint64(now.UnixMilli())
	if ms <= s.lastMS {
		// Same (or an earlier) millisecond: keep the last time and count up,
		// so names never sort before ones already handed out.
		ms = s.lastMS
		for i := len(s.lastRnd) - 1; i >= 0; i-- {
			s.lastRnd[i]++
			if s.lastRnd[i] != 0 {
				break
			}
		}
	} else {
		s.lastMS = ms
		s.entropy(s.lastRnd[:])
		// Keep the top bit clear so that incrementing within a millisecond
		// cannot overflow in practice.
		s.lastRnd[0] &= 0x7f
	}
	return encodeULID(ms, s.lastRnd)
}

// encodeULID writes a 48-bit millisecond time and 80 random bits as 26
// Crockford Base32 characters.
func encodeULID(ms uint64, rnd [10]byte) string {
	var raw [16]byte
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], ms)
	copy(raw[:6], t[2:])
	copy(raw[6:], rnd[:])
	// 128 bits as 26 five-bit groups; the first group holds the top 3 bits.
	var out [26]byte
	hi := binary.BigEndian.Uint64(raw[:8])
	lo := binary.BigEndian.Uint64(raw[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&0x1f]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// promotionName is the name Kargo's webhook gives a Promotion:
// <stage>.<ulid>.<freight[:7]>, lower-cased.
func promotionName(stage, freight, ulid string) string {
	if stage == "" || freight == "" {
		return ""
	}
	hash := freight
	if len(hash) > promotionShortHashLength {
		hash = hash[:promotionShortHashLength]
	}
	if len(stage) > maxStagePrefix {
		stage = stage[:maxStagePrefix]
	}
	return strings.ToLower(stage + "." + ulid + "." + hash)
}
