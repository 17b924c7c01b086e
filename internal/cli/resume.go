package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func newResumeCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &intentOptions{
		kube:    kube,
		verb:    "resume",
		intent:  fleetv1alpha1.IntentRun,
		from:    []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentPause},
		after:   "The rollout goes on. Follow it with:\n  kargo-fleet status %s -n %s --watch",
		streams: streams,
	}
	return newIntentCommand(o, "Resume a paused fleet's rollouts",
		"Sets spec.intent back to Run on the FleetStage's paused FleetRollouts. An aborted rollout stays aborted.")
}
