package cli

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// recordedStages keeps the Stages the FleetStage generated: those whose
// name and UID its Stage record holds. Labels and owner references can be
// written by anyone who may create Stages, so a Stage outside the record
// is not shown as the fleet's; the warning names it. When the record cannot
// be read (not written yet, or no right to get ConfigMaps) every Stage is
// kept and the warning says they are not verified.
func recordedStages(ctx context.Context, c client.Reader, fs *fleetv1alpha1.FleetStage, stages []kargo.Stage) (
	[]kargo.Stage, string) {
	rec, err := stagerecord.NewReader(c).Read(ctx, fs)
	if err != nil {
		return stages, fmt.Sprintf("the target Stages are not verified against the FleetStage's Stage record: %v", err)
	}
	kept, foreign := rec.Keep(stages)
	if len(foreign) == 0 {
		return kept, ""
	}
	slices.Sort(foreign)
	return kept, fmt.Sprintf("%d Stage(s) labelled for FleetStage %q are not Stages it generated and are not shown: %s",
		len(foreign), fs.Name, strutil.Sample(foreign, 5))
}
