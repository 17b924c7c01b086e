package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// historyOptions configures `kargo-fleet history`.
type historyOptions struct {
	kube       kubeOptions
	fleetStage string
	target     string
	output     *outputOptions

	streams genericiooptions.IOStreams
}

func newHistoryCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &historyOptions{kube: kube, output: newOutputOptions(false, true), streams: streams}
	cmd := &cobra.Command{
		Use:   "history [FLEETSTAGE]",
		Short: "List a fleet's rollouts and rollbacks, or one target's Freight history",
		Long: "Lists every rollout of a FleetStage, oldest first: direction, Freight, who started it, when, how long " +
			"it took, its result, each wave's outcome (with the time Kargo recorded the Freight approved for the " +
			"wave, if it was: Kargo records no approver), the threshold breach and who last paused, resumed or " +
			"aborted it. Rollouts the history limit deleted come from the summaries the FleetStage keeps. " +
			"Break-glass Promotions into its target Stages follow, with who created them and why: intended, not drift. " +
			"--target shows one target Stage's Freight history as Kargo records it. -o name prints the " +
			"FleetRollouts that still exist (or, with --target, the target Stage).",
		Example: "  kargo-fleet history prod -n shop\n" +
			"  kargo-fleet history prod -n shop -o json\n" +
			"  kargo-fleet history prod -n shop --target eu-west-1-003",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *historyOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	cmd.Flags().StringVar(&o.target, "target", "", "Show this target's Freight history instead.")
	o.kube.completeFleetFlags(cmd)
}

func (o *historyOptions) validate() error {
	return o.output.validate()
}

func (o *historyOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	freight := &kargo.FreightList{}
	if err := c.List(ctx, freight, client.InNamespace(fs.Namespace)); err != nil {
		return fmt.Errorf("error listing Freight in namespace %q: %w", fs.Namespace, err)
	}
	aliases := map[string]string{}
	for i := range freight.Items {
		if freight.Items[i].Alias != "" {
			aliases[freight.Items[i].Name] = freight.Items[i].Alias
		}
	}
	if o.target != "" {
		return o.runTarget(ctx, c, fs, aliases)
	}
	rollouts, err := rolloutstore.List(ctx, c, fs.Namespace, fs.Name)
	if err != nil {
		return err
	}
	breakGlass := &kargo.PromotionList{}
	if err := c.List(ctx, breakGlass, client.InNamespace(fs.Namespace),
		client.MatchingLabels{fleetv1alpha1.BreakGlassLabel: fs.Name}); err != nil {
		return fmt.Errorf("error listing break-glass Promotions of FleetStage %q: %w", fs.Name, err)
	}
	in := report.HistoryInput{FleetStage: fs, Freight: freight.Items, Aliases: aliases, BreakGlass: breakGlass.Items}
	for _, ro := range rollouts {
		in.Rollouts = append(in.Rollouts, *ro)
	}
	h := report.BuildHistory(in)
	switch {
	case o.output.names():
		objs := make([]apiruntime.Object, 0, len(rollouts))
		for _, ro := range rollouts {
			objs = append(objs, ro)
		}
		return o.output.printObjects(o.streams.Out, objs...)
	case !o.output.text():
		return o.output.printValue(o.streams.Out, h)
	}
	return report.RenderHistoryText(newFitWriter(o.streams.Out), h)
}

// runTarget shows one target Stage's Freight history.
func (o *historyOptions) runTarget(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage, aliases map[string]string) error {
	stages := &kargo.StageList{}
	if err := c.List(ctx, stages, client.InNamespace(fs.Namespace), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
		fleetv1alpha1.TargetLabel: plan.TargetID(o.target),
	}); err != nil {
		return fmt.Errorf("error listing the target Stage of target %q: %w", o.target, err)
	}
	var warning string
	if stages.Items, warning = recordedStages(ctx, c, fs, stages.Items); warning != "" {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "warning: %s\n", warning)
	}
	if len(stages.Items) == 0 {
		return fmt.Errorf("--target %q: FleetStage %q has no such target", o.target, fs.Name)
	}
	th := report.BuildTargetHistory(&stages.Items[0], aliases)
	switch {
	case o.output.names():
		return o.output.printObjects(o.streams.Out, &stages.Items[0])
	case !o.output.text():
		return o.output.printValue(o.streams.Out, th)
	}
	return report.RenderTargetHistoryText(newFitWriter(o.streams.Out), th)
}
