package fleetrollout

import (
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

// RollbackName is the name of the one rollback of a rollout:
// "<rollout>-rb", shortened with a hash of the rollout's name when it would
// not fit a label value. The automatic policy, the fleet-rollback step and
// the CLI all derive it, so a second request for the same rollback is an
// AlreadyExists, never a twin.
func RollbackName(rollout string) string {
	name := rollout + "-rb"
	if len(name) <= maxNameLen {
		return name
	}
	return strings.TrimRight(rollout[:maxNameLen-12], "-.") + "-rb-" + hashOf(rollout)[:8]
}

// SnapshotName is the name of the ConfigMap holding a rollout's plan
// snapshot: "<rollout>-plan". It is immutable and owned by the rollout.
func SnapshotName(rollout string) string { return rollout + "-plan" }
