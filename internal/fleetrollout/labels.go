package fleetrollout

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Labels and annotations on FleetRollouts. FleetRollouts also carry
// fleetv1alpha1.FleetStageLabel, which the generated Stages and Promotions
// share.
const (
	// FreightLabel holds a label-safe form of the rollout's Freight name (see
	// FreightLabelValue), so the rollouts of a (FleetStage, Freight) pair are
	// one label-selected list away. Every rollout carries it, rollbacks
	// included.
	FreightLabel = "fleet.kargo-fleet.io/freight"
	// WavePromotionLabel, on a Promotion of a wave Stage that kargo-fleet
	// created to hand the Freight on from the previous wave, names the
	// rollout that did.
	WavePromotionLabel = "fleet.kargo-fleet.io/promoted-by"
	// RecoversAnnotation, on a wave Stage Promotion kargo-fleet created
	// because the wave's previous one ended Errored, names that errored
	// Promotion: each errored Promotion is recovered once.
	RecoversAnnotation = "fleet.kargo-fleet.io/recovers"
	// StepKeyAnnotation records the Promotion and step alias that created
	// the rollout ("<promotion>/<alias>"), which makes step requests
	// idempotent.
	StepKeyAnnotation = "fleet.kargo-fleet.io/step-key"
	// RequestedAtAnnotation records when the rollout was built, to the
	// nanosecond (RFC 3339), by the clock of the process that built it. It
	// orders rollouts created within the same second, which
	// creationTimestamp cannot; creationTimestamp, set by the API server,
	// still decides first.
	RequestedAtAnnotation = "fleet.kargo-fleet.io/requested-at"
	// ReasonAnnotation, on a rollback, says why it was asked for.
	ReasonAnnotation = fleetv1alpha1.RollbackReasonAnnotation
	// AnyFreightAnnotation, "true" on a rollback, allows its Freight to be
	// held back after a breach or not to have passed the fleet: whoever
	// asked chose that Freight deliberately (the fleet-rollback step's
	// anyFreight, kargo-fleet rollback --any-freight).
	AnyFreightAnnotation = "fleet.kargo-fleet.io/any-freight"
	// IntentActorAnnotation records who last set spec.intent (pause,
	// resume, abort), as Kargo names actors: "kubernetes:<user>". Whoever
	// changes the intent sets it in the same write; the rollout's Events
	// name it.
	IntentActorAnnotation = "fleet.kargo-fleet.io/intent-actor"
	// WaveRequestAnnotationPrefix prefixes the annotation recording that a
	// Promotion of a wave Stage asks the wave to run:
	// wave.fleet.kargo-fleet.io/<wave>: <promotion name>. The rollout
	// controller runs only requested waves and refreshes that Promotion when
	// the wave finishes.
	WaveRequestAnnotationPrefix = "wave.fleet.kargo-fleet.io/"
	// Finalizer is on every unfinished rollout: deleting one aborts it. The
	// controller aborts its running target Promotions, records it as
	// Aborted in the FleetStage's history (so the step server never starts
	// it again under the same name), then removes the finalizer. A rollout
	// loses the finalizer once it has finished.
	Finalizer = "fleet.kargo-fleet.io/abort-on-delete"
)

// FreightLabelValue returns the FreightLabel value for a Freight name: the
// name itself when it is a valid label value (Kargo's Freight names are 40
// hex digits), else a hash of it.
func FreightLabelValue(freight string) string {
	if len(validation.IsValidLabelValue(freight)) == 0 {
		return freight
	}
	return "h-" + hashOf(freight)[:40]
}

// WaveRequestAnnotation returns the annotation key recording a wave request.
func WaveRequestAnnotation(wave string) string { return WaveRequestAnnotationPrefix + wave }

// WaveRequests returns the wave requests recorded on a rollout: wave name to
// the name of the Promotion that asked for it.
func WaveRequests(ro *fleetv1alpha1.FleetRollout) map[string]string {
	out := map[string]string{}
	for k, v := range ro.Annotations {
		if wave, ok := strings.CutPrefix(k, WaveRequestAnnotationPrefix); ok && wave != "" {
			out[wave] = v
		}
	}
	return out
}

// StepKey is the StepKeyAnnotation value of a step call.
func StepKey(promotion, alias string) string { return promotion + "/" + alias }

// ParseStepKey splits a StepKeyAnnotation value into the Promotion and the
// step alias that created a rollout. It is not ok unless the value is what
// StepKey makes of a Promotion's name (a DNS subdomain, so without "/") and
// a non-empty alias.
func ParseStepKey(value string) (promotion, alias string, ok bool) {
	promotion, alias, ok = strings.Cut(value, "/")
	if !ok || alias == "" || len(validation.IsDNS1123Subdomain(promotion)) > 0 {
		return "", "", false
	}
	return promotion, alias, true
}

func hashOf(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// IntentActor returns who last set the rollout's spec.intent, or "" when
// nobody recorded it.
func IntentActor(ro *fleetv1alpha1.FleetRollout) string {
	return ro.Annotations[IntentActorAnnotation]
}
