package cli

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// completionTimeout bounds the cluster reads of one shell completion: a
// shell waiting on an unreachable API server is worse than no suggestion.
const completionTimeout = 5 * time.Second

// completionFunc is the shape of cobra's completion functions.
type completionFunc = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective)

// completeFleetStages completes the FLEETSTAGE argument with the names of
// the FleetStages of the namespace the flags name.
func completeFleetStages(kube *kubeOptions) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completionContext(cmd)
		defer cancel()
		c, ns, err := kube.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var list fleetv1alpha1.FleetStageList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(list.Items))
		for i := range list.Items {
			names = append(names, list.Items[i].Name)
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRollouts completes a flag naming a FleetRollout with the names of
// the rollouts of the FleetStage given as argument (the namespace's only
// one when none is given) that keep passes.
func completeRollouts(kube *kubeOptions, keep func(*fleetv1alpha1.FleetRollout) bool) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx, cancel := completionContext(cmd)
		defer cancel()
		c, fs, err := kube.connectFleetStage(ctx, firstArg(args))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		rollouts, err := listRollouts(ctx, c, fs)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		// Newest first: the rollout one names is usually the latest.
		for i := len(rollouts) - 1; i >= 0; i-- {
			if keep == nil || keep(&rollouts[i]) {
				names = append(names, rollouts[i].Name)
			}
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeWaves completes a flag naming a wave of the FleetStage given as
// argument, in promotion order.
func completeWaves(kube *kubeOptions) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx, cancel := completionContext(cmd)
		defer cancel()
		_, fs, err := kube.connectFleetStage(ctx, firstArg(args))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(fs.Spec.Waves))
		for _, w := range fs.Spec.Waves {
			names = append(names, w.Name)
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// unfinished keeps the rollouts pause, resume and abort can change.
func unfinished(ro *fleetv1alpha1.FleetRollout) bool { return !ro.Status.Phase.IsFinal() }

// forward keeps the rollouts rollback can roll back.
func forward(ro *fleetv1alpha1.FleetRollout) bool {
	return ro.Spec.Direction != fleetv1alpha1.DirectionRollback
}

func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmp.Or(cmd.Context(), context.Background()), completionTimeout)
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// withPrefix returns the names starting with prefix, in their order.
func withPrefix(names []string, prefix string) []cobra.Completion {
	out := make([]cobra.Completion, 0, len(names))
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return slices.Clip(out)
}
