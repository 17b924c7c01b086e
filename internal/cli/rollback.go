package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	rolloutplan "github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// rollbackOptions configures `kargo-fleet rollback`.
type rollbackOptions struct {
	kube       kubeOptions
	fleetStage string
	to         string
	of         string
	dryRun     bool
	anyFreight bool
	output     *outputOptions

	out io.Writer
	// result is the rollback the command created, found or would create:
	// what -o prints instead of the sentences.
	result *fleetv1alpha1.FleetRollout
}

func newRollbackCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &rollbackOptions{kube: kube, out: streams.Out, output: newOutputOptions(false, true)}
	cmd := &cobra.Command{
		Use:   "rollback [FLEETSTAGE]",
		Short: "Return the targets a rollout moved to the last good Freight",
		Long: "Creates a FleetRollout with direction Rollback: the controller promotes the last good Freight " +
			"(or --to) to exactly the targets the rolled-back rollout moved, in reverse wave order. The rollout " +
			"rolled back is the FleetStage's current forward rollout, else its last one (or --of); when it could " +
			"still start target Promotions it is aborted first. A rollout has one rollback at a time, whoever asks " +
			"for it (this command, the fleet-rollback step, the automatic policy): while it runs, running this " +
			"command again reports it; when it is paused, this command resumes it; when it was aborted or failed, " +
			"this command starts another attempt, which returns the targets the earlier ones did not. As the step " +
			"does, it refuses Freight held back after a breach or that has not passed the fleet, unless " +
			"--any-freight. It is the command `kargo-fleet status` names after an abort, a pause or a failure.\n\n" +
			"-o name, json or yaml prints that FleetRollout (with --dry-run, the one that would be created) " +
			"instead of the sentences.",
		Example: "  kargo-fleet rollback prod -n shop\n  kargo-fleet rollback prod -n shop --to v1.4.0\n" +
			"  kubectl fleet rollback prod -n shop --of prod-9f8e7d6c5b\n" +
			"  kargo-fleet rollback prod -n shop --dry-run -o yaml",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.print(streams.Out)),
	}
	o.addFlags(cmd, streams)
	return cmd
}

func (o *rollbackOptions) addFlags(cmd *cobra.Command, streams genericiooptions.IOStreams) {
	o.kube.addFlags(cmd, streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "Freight (name or alias) to return to (default: the FleetStage's last good Freight).")
	o.kube.completeFleetFlags(cmd)
	f.StringVar(&o.of, "of", "", "FleetRollout to roll back (default: the current forward rollout, else the last one).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Print the FleetRollout that would be created without creating it.")
	_ = cmd.RegisterFlagCompletionFunc("of", completeRollouts(&o.kube, forward))
	f.BoolVar(&o.anyFreight, "any-freight", false,
		"Allow Freight held back after a breach, or that has not passed the fleet (no succeeded rollout of it, not the last good Freight).")
}

func (o *rollbackOptions) validate() error {
	if strings.TrimSpace(o.to) != o.to || strings.TrimSpace(o.of) != o.of {
		return fmt.Errorf("--to and --of must not have leading or trailing spaces")
	}
	return o.output.validate()
}

// print runs the command; with -o it prints the rollback as an object
// instead of the sentences.
func (o *rollbackOptions) print(out io.Writer) func(context.Context) error {
	return func(ctx context.Context) error {
		if o.output.text() {
			return o.run(ctx)
		}
		o.out = io.Discard
		if err := o.run(ctx); err != nil {
			return err
		}
		return o.output.printObjects(out, o.result)
	}
}

func (o *rollbackOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, ns, err := o.kube.connect()
	if err != nil {
		return err
	}
	fs, err := getFleetStage(ctx, c, ns, o.fleetStage)
	if err != nil {
		return err
	}
	records, err := rolloutstore.RollbackRecords(ctx, c, fs, o.of)
	if err != nil {
		return err
	}
	var named *kargo.Freight
	if o.to != "" {
		if named, err = o.freight(ctx, c, fs); err != nil {
			return err
		}
	}
	req := rolloutplan.RollbackRequest{Asker: rolloutplan.AskedByCLI, FleetStage: fs, Rollouts: records, Of: o.of, AnyFreight: o.anyFreight}
	if named != nil {
		req.Freight = named.Name
	}
	p := rolloutplan.PlanRollback(req)
	switch {
	case p.Refused != nil:
		return p.Refused
	case p.Existing != nil:
		return o.report(ctx, c, fs, p.Of, p.Existing, p.Freight)
	}
	freight := p.Freight
	if named != nil && named.Origin.Name != "" {
		freight.Origin = &fleetv1alpha1.FreightOrigin{Kind: named.Origin.Kind, Name: named.Origin.Name}
	}
	return o.attempt(ctx, c, fs, p, freight)
}

// attempt creates the rollback the plan decided on (the next attempt after
// p.Retries, which did not return every target, if any); it aborts the
// rolled-back rollout first when it could still move targets.
func (o *rollbackOptions) attempt(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage,
	p rolloutplan.RollbackPlan, freight fleetv1alpha1.FreightReference) error {
	of, actor := p.Of, whoAmI(ctx, c)
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: freight, Actor: actor,
		Reason: "requested with kargo-fleet rollback", AnyFreight: o.anyFreight, Attempt: p.Attempt})
	if o.dryRun {
		o.result = rb
		_, err := fmt.Fprintf(o.out, "Would create FleetRollout %s: Rollback of %s to Freight %s, by %s (dry run).\n",
			rb.Name, of.Name, shortFreight(freight.Name), actor)
		return err
	}
	if stillMoving(of) {
		// Otherwise it would go on moving targets the rollback returns.
		if err := setIntent(ctx, c, of, fleetv1alpha1.IntentAbort, actor); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(o.out, "Aborted FleetRollout %s (%s) first: it starts no new target Promotion.\n",
			of.Name, describeRollout(of)); err != nil {
			return err
		}
	}
	got, created, err := rolloutstore.CreateRollback(ctx, c, c, rb)
	if err != nil {
		return err
	}
	o.result = got
	if !created {
		return o.report(ctx, c, fs, of, got, freight)
	}
	retry := ""
	if p.Retries != nil {
		retry = fmt.Sprintf(" It returns the targets rollback %s (%s) did not.", p.Retries.Name, describeRollout(p.Retries))
	}
	_, err = fmt.Fprintf(o.out, "Created FleetRollout %s: Rollback of %s (%s) to Freight %s, by %s.%s\n"+
		"Follow it with: kargo-fleet status %s -n %s --watch\n",
		got.Name, of.Name, describeRollout(of), shortFreight(freight.Name), got.Spec.Actor, retry, fs.Name, fs.Namespace)
	return err
}

// report handles a rollback of the rollout that exists and needs no new
// attempt: it resumes it when paused and says what it does. A rollback to
// other Freight is an error: a rollout has one rollback at a time.
func (o *rollbackOptions) report(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage,
	of, rb *fleetv1alpha1.FleetRollout, freight fleetv1alpha1.FreightReference) error {
	o.result = rb
	if rb.Spec.Freight.Name != freight.Name {
		return &fleetrollout.ConflictError{Existing: rb, Freight: freight.Name}
	}
	follow := fmt.Sprintf("Follow it with: kargo-fleet status %s -n %s --watch", fs.Name, fs.Namespace)
	switch {
	case rb.Status.Phase == fleetv1alpha1.RolloutSucceeded:
		_, err := fmt.Fprintf(o.out, "FleetRollout %s returned the targets of %s to Freight %s (%s): nothing left to roll back.\n",
			rb.Name, of.Name, shortFreight(rb.Spec.Freight.Name), describeRollout(rb))
		return err
	case rb.Spec.Intent == fleetv1alpha1.IntentPause:
		if o.dryRun {
			_, err := fmt.Fprintf(o.out, "Would resume FleetRollout %s, the paused rollback of %s (dry run).\n", rb.Name, of.Name)
			return err
		}
		if err := setIntent(ctx, c, rb, fleetv1alpha1.IntentRun, whoAmI(ctx, c)); err != nil {
			return err
		}
		_, err := fmt.Fprintf(o.out, "Resumed FleetRollout %s, the paused rollback of %s (%s).\n%s\n",
			rb.Name, of.Name, describeRollout(rb), follow)
		return err
	}
	_, err := fmt.Fprintf(o.out, "FleetRollout %s already rolls back %s (%s).\n%s\n", rb.Name, of.Name, describeRollout(rb), follow)
	return err
}

// stillMoving says a forward rollout could still start target Promotions:
// unfinished, not halted (a halted one starts nothing) and not aborted.
func stillMoving(ro *fleetv1alpha1.FleetRollout) bool {
	return !ro.Status.Phase.IsFinal() && ro.Status.Phase != fleetv1alpha1.RolloutHalted &&
		ro.Spec.Intent != fleetv1alpha1.IntentAbort
}

// freight returns the Freight --to names (a name, an alias or a unique
// prefix of a name).
func (o *rollbackOptions) freight(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage) (*kargo.Freight, error) {
	return resolveFreight(ctx, c, fs.Namespace, o.to)
}
