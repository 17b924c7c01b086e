package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// Output formats of `kargo-fleet targets` besides json.
const (
	outputTable = "table"
	outputWide  = "wide"
	outputYAML  = "yaml"
)

// targetsOptions configures `kargo-fleet targets`.
type targetsOptions struct {
	kube       kubeOptions
	fleetStage string
	selector   string
	wave       string
	output     string

	out, errOut io.Writer
}

func newTargetsCommand(out, errOut io.Writer, kube kubeOptions) *cobra.Command {
	o := &targetsOptions{kube: kube, out: out, errOut: errOut}
	cmd := &cobra.Command{
		Use:   "targets [FLEETSTAGE]",
		Short: "List a fleet's targets with their Stage names, waves, labels, params and Freight",
		Long: "Lists every target of a FleetStage with the name of its generated target Stage (the Stage an Argo " +
			"CD Application must authorize: kargo.akuity.io/authorized-stage: <project>:<stage>), its wave, its " +
			"inventory labels and params and the Freight it runs. Read from the target Stages; labels and params " +
			"from the FleetStage's inventory sources. -o json or yaml is meant for generating per-target Argo CD " +
			"Applications. FLEETSTAGE may be left out when the Project has only one.",
		Example: "  kargo-fleet targets prod -n shop\n" +
			"  kargo-fleet targets prod -n shop -l region=eu-west-1 --wave canary -o wide\n" +
			"  kargo-fleet targets prod -n shop -o json | jq -r '.targets[] | [.name, .authorizedStage] | @tsv'",
		Args: cobra.MaximumNArgs(1),
		RunE: fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *targetsOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVarP(&o.selector, "selector", "l", "", "Label selector over the targets' inventory labels (e.g. region=eu-west-1,tier!=critical).")
	f.StringVar(&o.wave, "wave", "", "List only the targets of this wave.")
	f.StringVarP(&o.output, "output", "o", outputTable, "Output format: table, wide, json or yaml.")
}

func (o *targetsOptions) validate() error {
	switch o.output {
	case outputTable, outputWide, outputJSON, outputYAML:
	default:
		return fmt.Errorf("--output %q: use table, wide, json or yaml", o.output)
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
		_, _ = fmt.Fprintf(o.errOut, "warning: %s\n", warning)
	}
	if o.wave != "" && !hasWave(fs, o.wave) {
		return fmt.Errorf("--wave %q: FleetStage %q has no such wave", o.wave, fs.Name)
	}
	sel, _ := labels.Parse(o.selector)
	if o.selector == "" {
		sel = nil
	}
	list = list.Filter(o.wave, sel)
	switch o.output {
	case outputJSON:
		return report.RenderTargetsJSON(o.out, list)
	case outputYAML:
		return report.RenderTargetsYAML(o.out, list)
	}
	return report.RenderTargetsTable(o.out, list, o.output == outputWide)
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
	warning := ""
	var byID map[string]plan.Target
	if targets, err := inventory.NewReader(c).Read(ctx, fs); err != nil {
		warning = fmt.Sprintf("target labels are not shown and params come from the Stages' variables: %v", err)
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
		warning, nil
}
