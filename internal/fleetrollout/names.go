package fleetrollout

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Every rollout name fits a label value: target Promotions carry it in
// fleetv1alpha1.RolloutLabel.
const maxNameLen = validation.LabelValueMaxLength

// ForwardName is the name of the forward rollout a Promotion's step call
// asks for: "<fleetstage>-<hash>", the hash taken over the FleetStage, the
// Freight and the requesting Promotion. Replaying the call after a crash, on any
// replica, derives the same name and finds the rollout instead of creating a
// second one; a new Promotion of the same Freight (after a failed rollout)
// gets a new rollout.
func ForwardName(fleetStage, freight, promotion string) string {
	const hashLen = 10
	sum := hashOf(fleetStage, freight, string(fleetv1alpha1.DirectionForward), "", promotion)
	prefix := strings.TrimRight(strutil.Truncate(fleetStage, maxNameLen-hashLen-1), "-.")
	return prefix + "-" + sum[:hashLen]
}

// RollbackName is the name of the first rollback of a rollout:
// "<rollout>-rb", shortened with a hash of the rollout's name when it would
// not fit a label value. The automatic policy, the fleet-rollback step and
// the CLI all derive it, so a second request for the same rollback is an
// AlreadyExists, never a twin.
func RollbackName(rollout string) string { return RollbackAttemptName(rollout, 1) }

// MaxRollbackAttempts bounds the rollbacks of one rollout: the first, and
// the ones `kargo-fleet rollback` starts after an earlier one was aborted or
// failed.
const MaxRollbackAttempts = 5

// RollbackAttemptName is the name of a rollout's rollback attempt n (1 is
// the first, RollbackName): "<rollout>-rb", then "<rollout>-rb2",
// "<rollout>-rb3"... Retries have deterministic names too, so two operators
// retrying at once create one rollback.
func RollbackAttemptName(rollout string, attempt int) string {
	suffix := "-rb"
	if attempt > 1 {
		suffix += strconv.Itoa(attempt)
	}
	name := rollout + suffix
	if len(name) <= maxNameLen {
		return name
	}
	const hashLen = 8
	keep := maxNameLen - len(suffix) - 1 - hashLen
	return strings.TrimRight(rollout[:keep], "-.") + suffix + "-" + hashOf(rollout)[:hashLen]
}

// RollbackAttempt returns which rollback attempt of rollout name is, or 0
// when it is none of them.
func RollbackAttempt(name, rollout string) int {
	for n := 1; n <= MaxRollbackAttempts; n++ {
		if name == RollbackAttemptName(rollout, n) {
			return n
		}
	}
	return 0
}

// SnapshotName is the name of the ConfigMap holding a rollout's plan
// snapshot: "<rollout>-plan". It is immutable and owned by the rollout.
func SnapshotName(rollout string) string { return rollout + "-plan" }
