package kargo

// Kargo records on each Freight, per Stage, where it is (status.currentlyIn)
// and where it was verified (status.verifiedIn). A Freight promoted through
// a fleet of one Stage per target therefore carries an entry pair for every
// target, and the apiserver refuses an object larger than its request limit
// (etcd's 1.5 MiB by default): the Project's Stage count, not anything a
// single Stage holds, bounds a fleet.

// FreightObjectLimitBytes is the default size limit of a stored object
// (etcd's --max-request-bytes).
const FreightObjectLimitBytes = 1536 * 1024

// freightEntryOverhead is the JSON of one Stage's currentlyIn and verifiedIn
// entries without the two copies of its name: keys, quotes, RFC 3339
// timestamps and a longest soak ({"since":"…"}, {"verifiedAt":"…",
// "longestSoak":"…"}), rounded up from measurements.
const freightEntryOverhead = 110

// FreightStatusBytes estimates the status of a Freight that is current and
// verified in every named Stage, in bytes of JSON.
func FreightStatusBytes(stages []string) int {
	n := 64 // {"currentlyIn":{},"verifiedIn":{}} and the approvals of a few Stages
	for _, s := range stages {
		n += 2*len(s) + freightEntryOverhead
	}
	return n
}
