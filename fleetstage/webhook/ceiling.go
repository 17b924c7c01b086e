package webhook

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// estimatedTargetIDLength stands for the IDs of targets the webhook cannot
// see (inventory sources are read by the controller): a typical cluster
// name.
const estimatedTargetIDLength = 20

// CeilingWarning warns, without refusing, when the FleetStage's Stages
// approach the ceiling of one Kargo Freight: Kargo records a currentlyIn
// and a verifiedIn entry per Stage on every Freight, and the API server
// refuses an object past its size limit. The targets counted are the
// inline ones by name, and as many more as the FleetStage last selected
// (old, nil on create) from its other sources.
func CeilingWarning(fs, old *fleetv1alpha1.FleetStage) admission.Warnings {
	var names []string
	for _, src := range fs.Spec.Targets.Sources {
		for _, t := range src.Inline {
			names = append(names, render.TargetStageName(fs.Name, plan.TargetID(t.Name)))
		}
	}
	if old != nil {
		guessed := render.TargetStageName(fs.Name, fmt.Sprintf("%0*d", estimatedTargetIDLength, 0))
		for range int(old.Status.Targets.Selected) - len(names) {
			names = append(names, guessed)
		}
	}
	for _, w := range fs.Spec.Waves {
		names = append(names, render.WaveStageName(fs.Name, w.Name))
	}
	size := kargo.FreightStatusBytes(names)
	if size <= kargo.FreightStatusWarnBytes {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("spec.targets: a Freight promoted through this FleetStage's %d Stages would carry "+
		"about %d KiB of status in Kargo (one currentlyIn and one verifiedIn entry per Stage), %d%% of the API server's "+
		"%d KiB object limit, which it cannot pass: split the fleet across Projects before it grows further (docs/shards.md)",
		len(names), (size+1023)/1024, size*100/kargo.FreightObjectLimitBytes, kargo.FreightObjectLimitBytes/1024)}
}
