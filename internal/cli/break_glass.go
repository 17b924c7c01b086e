package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// breakGlassOptions configures `kargo-fleet break-glass`.
type breakGlassOptions struct {
	kube       kubeOptions
	fleetStage string
	stage      string
	target     string
	freight    string
	reason     string
	dryRun     bool
	output     *outputOptions

	out io.Writer
}

func newBreakGlassCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &breakGlassOptions{kube: kube, out: streams.Out, output: newOutputOptions(false, true)}
	cmd := &cobra.Command{
		Use:   "break-glass [FLEETSTAGE]",
		Short: "Promote Freight into one target of a fleet directly, in an incident",
		Long: "Creates, as you, a Kargo Promotion of --freight into one target Stage of the fleet, marked as a " +
			"break-glass Promotion with your --reason. kargo-fleet's admission guard otherwise lets only the fleet's " +
			"rollouts, rollbacks and drift reverts promote target Stages; it admits this one when you hold the verb " +
			"break-glass on the FleetStage (the chart's ClusterRole <release>-break-glass, kargo-fleet-break-glass " +
			"for the release kargo-fleet, which no default role includes), get on the FleetStage (to find its " +
			"target Stage) and Kargo's promote on the Stage. Freight held back after a breach is refused all the " +
			"same. --dry-run asks the API server, Kargo's webhook and the fleet's guard whether they would admit " +
			"it, and creates nothing. " +
			"The fleet records the Promotion in an Event on the FleetStage and treats the target's Freight as " +
			"intended, not as drift, until the next rollout reaches the target. The Kargo UI cannot do this: it " +
			"promotes as Kargo's API server, and the guard trusts only the user who makes the request.",
		Example: "  kargo-fleet break-glass prod -n shop --target eu-west-1-003 \\\n" +
			"      --freight 3f2a9c1 --reason \"INC-4711: hotfix\" --dry-run\n" +
			"  kargo-fleet break-glass prod -n shop --target eu-west-1-003 \\\n" +
			"      --freight 3f2a9c1 --reason \"INC-4711: hotfix\"\n" +
			"  kargo-fleet break-glass prod -n shop --stage prod.eu-west-1-003 \\\n" +
			"      --freight 3f2a9c1 --reason INC-4711",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.kube.addFlags(cmd, streams)
	f := cmd.Flags()
	f.StringVar(&o.stage, "stage", "", "Target Stage to promote (or --target).")
	f.StringVar(&o.target, "target", "", "Target id whose Stage to promote (or --stage).")
	f.StringVar(&o.freight, "freight", "", "Freight to promote: its name, its alias or the first seven or more characters of its name.")
	f.StringVar(&o.reason, "reason", "", "Why: recorded on the Promotion and in the FleetStage's Event (required).")
	o.kube.completeFleetFlags(cmd)
	f.BoolVar(&o.dryRun, "dry-run", false, "Ask the API server and every admission webhook whether the Promotion would be "+
		"admitted (server-side dry run); create nothing.")
	o.output.addFlags(cmd)
	return cmd
}

func (o *breakGlassOptions) validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	switch {
	case (o.stage == "") == (o.target == ""):
		return fmt.Errorf("exactly one of --stage and --target must be set")
	case o.freight == "":
		return fmt.Errorf("--freight must be set")
	case strings.TrimSpace(o.reason) == "":
		return fmt.Errorf("--reason must be set: a break-glass Promotion says why")
	}
	return nil
}

func (o *breakGlassOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	stage := o.stage
	if stage == "" {
		stage = render.TargetStageName(fs.Name, o.target)
	}
	switch freight, err := resolveFreight(ctx, c, fs.Namespace, o.freight); {
	case err == nil:
		o.freight = freight.Name
	case !apierrors.IsForbidden(err):
		return err
	}
	// A user who may not read Freight names it in full: Kargo's webhook
	// judges the name given.
	p := kargo.NewPromotion(fs.Namespace, stage, o.freight,
		// The FleetStage label lets the fleet dashboard, which watches
		// only the fleet's Promotions, show who pushed the target and why.
		map[string]string{fleetv1alpha1.BreakGlassLabel: fs.Name, fleetv1alpha1.FleetStageLabel: fs.Name},
		map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: strings.TrimSpace(o.reason)})
	var opts []client.CreateOption
	if o.dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Create(ctx, p, opts...); err != nil {
		return breakGlassError(err, fs.Namespace, o.freight, stage)
	}
	switch {
	case !o.output.text():
		return o.output.printObjects(o.out, p)
	case o.dryRun:
		_, err = fmt.Fprintf(o.out, "Break-glass Promotion of Freight %s into target Stage %s of FleetStage %s would be "+
			"admitted (dry run: nothing was created).\n", o.freight, stage, fs.Name)
		return err
	}
	_, err = fmt.Fprintf(o.out, "Break-glass Promotion %s created: Freight %s into target Stage %s of FleetStage %s.\n"+
		"Follow it in the Kargo UI or with: kubectl get promotion %s -n %s\n", p.Name, o.freight, stage, fs.Name, p.Name, fs.Namespace)
	return err
}

// breakGlassError words a refused break-glass Promotion. Kargo's own
// webhook admits Freight into a Stage only once it is verified upstream of
// it or approved for it; a hotfix Freight usually is neither for a critical
// target, so the error says how to approve it.
func breakGlassError(err error, namespace, freight, stage string) error {
	notAvailable := kargo.IsFreightNotAvailable(err)
	err = fmt.Errorf("error creating break-glass Promotion of Freight %s into Stage %q: %w", freight, stage, err)
	if !notAvailable {
		return err
	}
	return fmt.Errorf("%w\nKargo admits Freight into a Stage once it is verified upstream of it or approved for it; "+
		"approve it for this one Stage first (Kargo's promote right on the Stage), then run this again:\n"+
		"  kargo approve --project %s --freight %s --stage %s", err, namespace, freight, stage)
}
