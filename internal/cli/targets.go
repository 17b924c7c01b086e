package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// targetsOptions configures `kargo-fleet targets`.
type targetsOptions struct {
	kube       kubeOptions
	fleetStage string
	selector   string
	wave       string
	output     *outputOptions

	streams genericiooptions.IOStreams
}

func newTargetsCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &targetsOptions{kube: kube, output: newOutputOptions(true, true), streams: streams}
	cmd := &cobra.Command{
		Use:   "targets [FLEETSTAGE]",
		Short: "List a fleet's targets with their Stage names, waves, labels, params and Freight",
		Long: "Lists every target of a FleetStage with the name of its generated target Stage (the Stage an Argo " +
			"CD Application must authorize: kargo.akuity.io/authorized-stage: <project>:<stage>), its wave, its " +
			"inventory labels and params and the Freight it runs. Read from the target Stages; labels and params " +
			"from the FleetStage's inventory sources. -o json or yaml is meant for generating per-target Argo CD " +
			"Applications; -o name prints the target Stages (stage.kargo.akuity.io/NAME). FLEETSTAGE may be " +
			"left out when the Project has only one.",
		Example: "  kargo-fleet targets prod -n shop\n" +
			"  kargo-fleet targets prod -n shop -l region=eu-west-1 --wave canary -o wide\n" +
			"  kargo-fleet targets prod -n shop -o json |\n" +
			"    jq -r '.targets[] | [.name, .authorizedStage] | @tsv'\n" +
			"  kargo-fleet targets prod -n shop -o name --wave canary",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *targetsOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.selector, "selector", "l", "", "Label selector over the targets' inventory labels (e.g. region=eu-west-1,tier!=critical).")
	f.StringVar(&o.wave, "wave", "", "List only the targets of this wave.")
	_ = cmd.RegisterFlagCompletionFunc("wave", completeWaves(&o.kube))
}

func (o *targetsOptions) validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return fmt.Errorf("--selector %q: %w", o.selector, err)
	}
	return nil
}

func (o *targetsOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	list, warning, err := readTargets(ctx, c, fs)
	if err != nil {
		return err
	}
	if warning != "" {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "warning: %s\n", warning)
	}
	if o.wave != "" && !hasWave(fs, o.wave) {
		return fmt.Errorf("--wave %q: FleetStage %q has no such wave", o.wave, fs.Name)
	}
	sel, _ := labels.Parse(o.selector)
	if o.selector == "" {
		sel = nil
	}
	list = list.Filter(o.wave, sel)
	switch {
	case o.output.names():
		objs := make([]apiruntime.Object, 0, len(list.Targets))
		for _, t := range list.Targets {
			objs = append(objs, &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: t.Stage}})
		}
		return o.output.printObjects(o.streams.Out, objs...)
	case !o.output.text():
		return o.output.printValue(o.streams.Out, list)
	}
	return report.RenderTargetsTable(o.streams.Out, list, o.output.isWide())
}

func hasWave(fs *fleetv1alpha1.FleetStage, wave string) bool {
	for _, w := range fs.Spec.Waves {
		if w.Name == wave {
			return true
		}
	}
	return false
}

// readTargets lists a FleetStage's targets from its target Stages, with
// labels and params from its inventory sources. When the inventory cannot
// be read (e.g. no right to list Argo CD cluster Secrets) the targets are
// still listed, without labels, and the returned warning says why.
func readTargets(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage) (report.TargetList, string, error) {
	var stages kargo.StageList
	if err := c.List(ctx, &stages, client.InNamespace(fs.Namespace), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
	}); err != nil {
		return report.TargetList{}, "", fmt.Errorf("error listing the target Stages of FleetStage %q: %w", fs.Name, err)
	}
	var warnings []string
	var warning string
	if stages.Items, warning = recordedStages(ctx, c, fs, stages.Items); warning != "" {
		warnings = append(warnings, warning)
	}
	var byID map[string]plan.Target
	if targets, err := inventory.NewReader(c).Read(ctx, fs); err != nil {
		warnings = append(warnings, fmt.Sprintf("target labels are not shown and params come from the Stages' variables: %v", err))
	} else {
		byID = make(map[string]plan.Target, len(targets))
		for _, t := range targets {
			byID[t.ID] = t
		}
	}
	aliases := map[string]string{}
	var freight kargo.FreightList
	if err := c.List(ctx, &freight, client.InNamespace(fs.Namespace)); err == nil {
		for i := range freight.Items {
			if freight.Items[i].Alias != "" {
				aliases[freight.Items[i].Name] = freight.Items[i].Alias
			}
		}
	}
	return report.BuildTargets(report.TargetsInput{FleetStage: fs, Stages: stages.Items, Inventory: byID, Aliases: aliases}),
		strings.Join(warnings, "; "), nil
}
