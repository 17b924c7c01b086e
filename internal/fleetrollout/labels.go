package fleetrollout

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
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
func WaveRequestAnnotation(wave string) string {
	return fleetv1alpha1.WaveRequestAnnotationPrefix + wave
}

// WaveRequests returns the wave requests recorded on a rollout: wave name to
// the name of the Promotion that asked for it.
func WaveRequests(ro *fleetv1alpha1.FleetRollout) map[string]string {
	out := map[string]string{}
	for k, v := range ro.Annotations {
		if wave, ok := strings.CutPrefix(k, fleetv1alpha1.WaveRequestAnnotationPrefix); ok && wave != "" {
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
	return ro.Annotations[fleetv1alpha1.IntentActorAnnotation]
}
