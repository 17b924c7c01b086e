package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func newAbortCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &intentOptions{
		kube:   kube,
		verb:   "abort",
		intent: fleetv1alpha1.IntentAbort,
		from:   []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentRun, fleetv1alpha1.IntentPause},
		after: "Running target Promotions are aborted through Kargo (one inside a step's request finishes first) " +
			"and no new one starts. To return moved targets to the last good Freight:\n" +
			"  kargo-fleet rollback %s -n %s",
		streams:        streams,
		spareRollbacks: true,
	}
	return newIntentCommand(o, "Abort a fleet's rollouts: abort running target Promotions, start no new one",
		"Sets spec.intent to Abort on the FleetStage's unfinished forward FleetRollouts (a rollback only when "+
			"--rollout names it: a rollback is what returns the fleet to its last good Freight): the controller aborts their "+
			"running target Promotions through Kargo and ends the rollouts as Aborted (their counts follow the "+
			"Promotions Kargo still finishes: one inside a step's request is not interrupted). Targets that already "+
			"moved stay where they are; `kargo-fleet rollback` returns them to the last good Freight.")
}
