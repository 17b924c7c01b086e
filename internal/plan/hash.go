package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// FNV-1a (64-bit) parameters, as in hash/fnv. The hash is computed inline
// over strings so ordering 10,000 targets allocates nothing.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// orderKey is a target's position in the stable hash order of one
// FleetStage: FNV-1a over seed, a zero byte and the target ID, followed by a
// 64-bit finalizer. FNV alone changes mostly the low bits when only the last
// characters of an ID differ ("cluster-0001", "cluster-0002"); the finalizer
// spreads every input bit over the whole key, so the order does not follow
// the names. The key depends on nothing but seed and ID: adding or removing
// other targets never changes it.
func orderKey(seed, id string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(seed); i++ {
		h ^= uint64(seed[i])
		h *= fnvPrime64
	}
	h ^= 0
	h *= fnvPrime64
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= fnvPrime64
	}
	return mix64(h)
}

// mix64 is the 64-bit finalizer of MurmurHash3 (fmix64): bijective, so
// distinct FNV values stay distinct, with full avalanche.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// PlanHash identifies a plan's outcome: for every wave, its name, resolved
// settings and members (IDs, in order), then the unassigned targets and the
// fleet-wide failure allowance. It changes exactly when one of those changes;
// a target's labels or params changing without moving it do not change it,
// and neither do excluded or unselected candidates. It is a hex SHA-256 (64
// characters, the PlanSnapshot bound).
//
// Fields are written one by one rather than by reflection, so the encoding
// is versioned ("kargo-fleet/plan/v1"): the wave settings are written in
// the order of waveKnobs, and a knob added later writes nothing at its zero
// value (as promotion does), so a rollout's recorded hash still matches a
// preview made by a newer release. The tests in hash_test.go change every
// field of PlannedWave and WavePlan by reflection and fail when one is
// missing here.
func PlanHash(p *WavePlan) string {
	h := &planHasher{h: sha256.New()}
	h.str("kargo-fleet/plan/v1")
	h.num(int64(len(p.Waves)))
	for i := range p.Waves {
		w := &p.Waves[i]
		h.str(w.Name)
		if w.Cap != nil {
			h.num(int64(*w.Cap))
		} else {
			h.num(-1)
		}
		for k := range waveKnobs {
			waveKnobs[k].hash(w, h)
		}
		h.num(int64(len(w.Members)))
		for j := range w.Members {
			h.str(w.Members[j].ID)
		}
	}
	h.num(int64(len(p.Unassigned)))
	for i := range p.Unassigned {
		h.str(p.Unassigned[i].ID)
	}
	if p.FleetMaxFailures != nil {
		h.num(int64(*p.FleetMaxFailures))
	} else {
		h.num(-1)
	}
	return hex.EncodeToString(h.h.Sum(nil))
}

// planHasher writes the values of a plan into a hash, each in a form that
// cannot run into the next: strings prefixed with their length, numbers as
// varints.
type planHasher struct {
	h   hash.Hash
	buf []byte
}

// str writes a string.
func (p *planHasher) str(s string) {
	p.buf = binary.AppendUvarint(p.buf[:0], uint64(len(s)))
	p.buf = append(p.buf, s...)
	_, _ = p.h.Write(p.buf)
}

// num writes a number.
func (p *planHasher) num(n int64) {
	p.buf = binary.AppendVarint(p.buf[:0], n)
	_, _ = p.h.Write(p.buf)
}

// laterNum writes a number setting added after the "kargo-fleet/plan/v1"
// encoding: nothing at zero, so a plan that does not use the setting keeps
// its hash, else the setting's name and then the number, so that two such
// settings can never be taken for one another.
func (p *planHasher) laterNum(name string, n int64) {
	if n == 0 {
		return
	}
	p.str(name)
	p.num(n)
}
