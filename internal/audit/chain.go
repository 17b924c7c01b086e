package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Head is where a trail ends: the newest record's sequence number and hash.
// The zero Head is an empty trail.
type Head struct {
	Sequence int64
	Hash     string
}

// HeadOf is the head of a trail ending in r.
func HeadOf(r *fleetv1alpha1.AuditRecord) Head {
	return Head{Sequence: r.Sequence, Hash: r.Hash}
}

// Hash is the hex SHA-256 of previous (the hash of the record before r) and
// r's JSON without its hash. JSON marshalling of the record's struct is
// deterministic (fields in declaration order, time to the microsecond in
// UTC), and the API server stores what it decodes into the same fields, so
// the hash of a record read back is the hash it was written with.
func Hash(previous string, r *fleetv1alpha1.AuditRecord) string {
	c := *r
	c.Hash = ""
	body, err := json.Marshal(&c)
	if err != nil {
		// A record holds strings, integers and a time: it always marshals.
		panic(fmt.Sprintf("audit record does not marshal: %v", err))
	}
	h := sha256.New()
	h.Write([]byte(previous))
	h.Write([]byte{'\n'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Chain numbers records after head and links each to the one before: it
// sets their sequence numbers and hashes, and returns the new head.
func Chain(head Head, records []fleetv1alpha1.AuditRecord) Head {
	for i := range records {
		r := &records[i]
		r.Sequence = head.Sequence + 1
		r.Time.Time = r.Time.UTC().Truncate(time.Microsecond) // as stored
		r.Hash = Hash(head.Hash, r)
		head = HeadOf(r)
	}
	return head
}
