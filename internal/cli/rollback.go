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
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// rollbackOptions configures `kargo-fleet rollback`.
type rollbackOptions struct {
	kube       kubeOptions
	fleetStage string
	to         string
	of         string
	dryRun     bool
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
			"rolled back is the FleetStage's current forward rollout, else its last one (or --of). A rollout has " +
			"one rollback, whoever asks for it (this command, the fleet-rollback step, the automatic policy): " +
			"running it again reports the existing rollback instead of creating another.\n\n" +
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
	o.kube.addFlags(cmd.Flags(), streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "Freight (name or alias) to return to (default: the FleetStage's last good Freight).")
	f.StringVar(&o.of, "of", "", "FleetRollout to roll back (default: the current forward rollout, else the last one).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Print the FleetRollout that would be created without creating it.")
	_ = cmd.RegisterFlagCompletionFunc("of", completeRollouts(&o.kube, forward))
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
	all, err := listRollouts(ctx, c, fs)
	if err != nil {
		return err
	}
	of, err := o.rolledBack(fs, all)
	if err != nil {
		return err
	}
	if existing, err := fleetrollout.FindRollbackOf(ctx, c, of.Namespace, of.Name); err != nil {
		return err
	} else if existing != nil {
		o.result = existing
		_, err := fmt.Fprintf(o.out, "FleetRollout %s already rolls back %s (%s): a rollout has one rollback.\n",
			existing.Name, of.Name, describeRollout(existing))
		return err
	}
	freight, err := o.freight(ctx, c, fs)
	if err != nil {
		return err
	}
	if freight.Name == of.Spec.Freight.Name {
		return fmt.Errorf("FleetRollout %q moved the fleet to Freight %s, the Freight to return to: nothing to roll back",
			of.Name, shortFreight(freight.Name))
	}
	ro := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: freight, Actor: whoAmI(ctx, c),
		Reason: "requested with kargo-fleet rollback"})
	if o.dryRun {
		o.result = ro
		_, err := fmt.Fprintf(o.out, "Would create FleetRollout %s: Rollback of %s to Freight %s, by %s (dry run).\n",
			ro.Name, of.Name, shortFreight(freight.Name), ro.Spec.Actor)
		return err
	}
	got, created, err := fleetrollout.EnsureRollback(ctx, c, c, ro)
	if err != nil {
		return err
	}
	o.result = got
	if !created {
		_, err := fmt.Fprintf(o.out, "FleetRollout %s already rolls back %s (%s): a rollout has one rollback.\n",
			got.Name, of.Name, describeRollout(got))
		return err
	}
	_, err = fmt.Fprintf(o.out, "Created FleetRollout %s: Rollback of %s (%s) to Freight %s, by %s.\n"+
		"Follow it with: kargo-fleet status %s -n %s --watch\n",
		ro.Name, of.Name, describeRollout(of), shortFreight(freight.Name), ro.Spec.Actor, fs.Name, fs.Namespace)
	return err
}

// rolledBack returns the rollout to roll back: --of, else the current
// forward rollout, else the last forward one.
func (o *rollbackOptions) rolledBack(fs *fleetv1alpha1.FleetStage, all []fleetv1alpha1.FleetRollout) (*fleetv1alpha1.FleetRollout, error) {
	byName := map[string]*fleetv1alpha1.FleetRollout{}
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	if o.of != "" {
		ro, ok := byName[o.of]
		switch {
		case !ok:
			return nil, fmt.Errorf("FleetRollout %q of FleetStage %q not found in namespace %q", o.of, fs.Name, fs.Namespace)
		case ro.Spec.Direction == fleetv1alpha1.DirectionRollback:
			return nil, fmt.Errorf("FleetRollout %q is itself a rollback: roll back a forward rollout", o.of)
		}
		return ro, nil
	}
	for _, name := range []string{fs.Status.CurrentRollout, fs.Status.LastRollout} {
		if ro, ok := byName[name]; ok && ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			return ro, nil
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Spec.Direction != fleetv1alpha1.DirectionRollback {
			return &all[i], nil
		}
	}
	return nil, fmt.Errorf("FleetStage %s/%s has no forward FleetRollout to roll back", fs.Namespace, fs.Name)
}

// freight returns the Freight to return to: --to (a name or an alias),
// else the FleetStage's last good Freight.
func (o *rollbackOptions) freight(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage) (fleetv1alpha1.FreightReference, error) {
	if o.to == "" {
		if fs.Status.LastGoodFreight == nil || fs.Status.LastGoodFreight.Name == "" {
			return fleetv1alpha1.FreightReference{}, fmt.Errorf(
				"FleetStage %s/%s has no last good Freight yet (status.lastGoodFreight is empty): name one with --to",
				fs.Namespace, fs.Name)
		}
		return *fs.Status.LastGoodFreight, nil
	}
	f := &kargo.Freight{}
	err := c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: o.to}, f)
	if apierrors.IsNotFound(err) {
		f, err = freightByAlias(ctx, c, fs.Namespace, o.to)
	}
	if err != nil {
		return fleetv1alpha1.FreightReference{}, err
	}
	ref := fleetv1alpha1.FreightReference{Name: f.Name}
	if f.Origin.Name != "" {
		ref.Origin = &fleetv1alpha1.FreightOrigin{Kind: f.Origin.Kind, Name: f.Origin.Name}
	}
	return ref, nil
}

// freightByAlias finds the Freight with the given alias.
func freightByAlias(ctx context.Context, c client.Client, ns, alias string) (*kargo.Freight, error) {
	var list kargo.FreightList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("error listing Freight in namespace %q: %w", ns, err)
	}
	for i := range list.Items {
		if list.Items[i].Alias == alias {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no Freight named or aliased %q in namespace %q", alias, ns)
}
