package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	rolloutplan "github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// rollbackOptions configures `kargo-fleet rollback`.
type rollbackOptions struct {
	kube       kubeOptions
	fleetStage string
	to         string
	of         string
	dryRun     bool
	anyFreight bool

	out io.Writer
}

func newRollbackCommand(out io.Writer, kube kubeOptions) *cobra.Command {
	o := &rollbackOptions{kube: kube, out: out}
	cmd := &cobra.Command{
		Use:   "rollback [FLEETSTAGE]",
		Short: "Return the targets a rollout moved to the last good Freight",
		Long: "Creates a FleetRollout with direction Rollback: the controller promotes the last good Freight " +
			"(or --to) to exactly the targets the rolled-back rollout moved, in reverse wave order. The rollout " +
			"rolled back is the FleetStage's current forward rollout, else its last one (or --of). A rollout has " +
			"one rollback, whoever asks for it (this command, the fleet-rollback step, the automatic policy): " +
			"running it again reports the existing rollback instead of creating another. As the step does, it " +
			"refuses Freight held back after a breach or that has not passed the fleet, unless --any-freight.",
		Example: "  kargo-fleet rollback prod -n shop\n  kargo-fleet rollback prod -n shop --to v1.4.0\n" +
			"  kubectl fleet rollback prod -n shop --of prod-9f8e7d6c5b",
		Args: cobra.MaximumNArgs(1),
		RunE: fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *rollbackOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "Freight (name or alias) to return to (default: the FleetStage's last good Freight).")
	f.StringVar(&o.of, "of", "", "FleetRollout to roll back (default: the current forward rollout, else the last one).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Print the FleetRollout that would be created without creating it.")
	f.BoolVar(&o.anyFreight, "any-freight", false,
		"Allow Freight held back after a breach, or that has not passed the fleet (no succeeded rollout of it, not the last good Freight).")
}

func (o *rollbackOptions) validate() error {
	if strings.TrimSpace(o.to) != o.to || strings.TrimSpace(o.of) != o.of {
		return fmt.Errorf("--to and --of must not have leading or trailing spaces")
	}
	return nil
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
	records, err := fleetrollout.RollbackRecords(ctx, c, fs, o.of)
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
		_, err := fmt.Fprintf(o.out, "FleetRollout %s already rolls back %s (%s): a rollout has one rollback.\n",
			p.Existing.Name, p.Of.Name, describeRollout(p.Existing))
		return err
	}
	freight := p.Freight
	if named != nil && named.Origin.Name != "" {
		freight.Origin = &fleetv1alpha1.FreightOrigin{Kind: named.Origin.Kind, Name: named.Origin.Name}
	}
	of := p.Of
	ro := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: freight, Actor: whoAmI(ctx, c),
		Reason: "requested with kargo-fleet rollback", AnyFreight: o.anyFreight})
	if o.dryRun {
		_, err := fmt.Fprintf(o.out, "Would create FleetRollout %s: Rollback of %s to Freight %s, by %s (dry run).\n",
			ro.Name, of.Name, shortFreight(freight.Name), ro.Spec.Actor)
		return err
	}
	got, created, err := fleetrollout.EnsureRollback(ctx, c, c, ro)
	if err != nil {
		return err
	}
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

// freight returns the Freight --to names (a name or an alias).
func (o *rollbackOptions) freight(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage) (*kargo.Freight, error) {
	f := &kargo.Freight{}
	err := c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: o.to}, f)
	if apierrors.IsNotFound(err) {
		return freightByAlias(ctx, c, fs.Namespace, o.to)
	}
	if err != nil {
		return nil, fmt.Errorf("error getting Freight %q: %w", o.to, err)
	}
	return f, nil
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
