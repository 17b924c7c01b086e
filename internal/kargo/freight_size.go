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

// FreightStatusWarnBytes is where kargo-fleet warns (the FleetStage's
// FreightStatusLarge condition, the admission webhook, doctor): two thirds
// of the object limit, leaving room for the Freight's own content and for
// Stage names longer than estimated.
const FreightStatusWarnBytes = FreightObjectLimitBytes * 2 / 3

// freightStatusBase is the status of a Freight in no Stage:
// {"currentlyIn":{},"verifiedIn":{}} and the approvals of a few Stages.
const freightStatusBase = 64

// MaxStagesPerFreight is the ceiling: how many Stages with names of
// nameLen characters one Freight can be current and verified in before
// its status passes the object limit.
func MaxStagesPerFreight(nameLen int) int {
	return (FreightObjectLimitBytes - freightStatusBase) / (2*nameLen + freightEntryOverhead)
}

// FreightStatusBytes estimates the status of a Freight that is current and
// verified in every named Stage, in bytes of JSON.
func FreightStatusBytes(stages []string) int {
	n := freightStatusBase
	for _, s := range stages {
		n += 2*len(s) + freightEntryOverhead
	}
	return n
}
