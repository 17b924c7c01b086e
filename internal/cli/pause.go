package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func newPauseCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &intentOptions{
		kube:   kube,
		verb:   "pause",
		intent: fleetv1alpha1.IntentPause,
		from:   []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentRun},
		after: "No new target Promotion starts; running ones finish. Resume with:\n" +
			"  kargo-fleet resume %s -n %s",
		streams:        streams,
		spareRollbacks: true,
	}
	return newIntentCommand(o, "Pause a fleet's rollouts: start no new target Promotion",
		"Sets spec.intent to Pause on the FleetStage's unfinished forward FleetRollouts (a rollback only when "+
			"--rollout names it): the controller starts no new "+
			"target Promotion, and the ones running finish. The wave step keeps waiting. Resume with "+
			"`kargo-fleet resume`.")
}
