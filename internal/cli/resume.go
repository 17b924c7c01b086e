package cli

import (
	"io"

	"github.com/spf13/cobra"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func newResumeCommand(out io.Writer, kube kubeOptions) *cobra.Command {
	o := &intentOptions{
		kube:   kube,
		verb:   "resume",
		intent: fleetv1alpha1.IntentRun,
		from:   []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentPause},
		after:  "The rollout goes on. Follow it with: kargo-fleet status %s -n %s --watch",
		out:    out,
	}
	return newIntentCommand(o, "Resume a paused fleet's rollouts",
		"Sets spec.intent back to Run on the FleetStage's paused FleetRollouts. An aborted rollout stays aborted.")
}
