package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// rollbackSuffix ends the name of a rollback the CLI creates.
const rollbackSuffix = "-rb"

// rollbackOptions configures `kargo-fleet rollback`.
type rollbackOptions struct {
	kube       kubeOptions
	fleetStage string
	to         string
	of         string
	dryRun     bool

	out io.Writer
}

func newRollbackCommand(out io.Writer, kube kubeOptions) *cobra.Command {
	o := &rollbackOptions{kube: kube, out: out}
	cmd := &cobra.Command{
		Use:   "rollback [FLEETSTAGE]",
		Short: "Return the targets a rollout moved to the last good Freight",
		Long: "Creates a FleetRollout with direction Rollback: the controller promotes the last good Freight " +
			"(or --to) to exactly the targets the rolled-back rollout moved, in reverse wave order. The rollout " +
			"rolled back is the FleetStage's current forward rollout, else its last one (or --of). Running it " +
			"twice is harmless: an unfinished rollback of the same rollout is reported, not duplicated.",
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
	all, err := listRollouts(ctx, c, fs)
	if err != nil {
		return err
	}
	of, err := o.rolledBack(fs, all)
	if err != nil {
		return err
	}
	for i := range all {
		ro := &all[i]
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && ro.Spec.RollbackOf == of.Name && !ro.Status.Phase.IsFinal() {
			_, err := fmt.Fprintf(o.out, "FleetRollout %s already rolls back %s (%s): nothing to do.\n",
				ro.Name, of.Name, describeRollout(ro))
			return err
		}
	}
	freight, err := o.freight(ctx, c, fs)
	if err != nil {
		return err
	}
	if freight.Name == of.Spec.Freight.Name {
		return fmt.Errorf("FleetRollout %q moved the fleet to Freight %s, the Freight to return to: nothing to roll back",
			of.Name, shortFreight(freight.Name))
	}
	name := rollbackName(of.Name, all)
	ro := &fleetv1alpha1.FleetRollout{
		TypeMeta: metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetRollout"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fs.Namespace,
			Name:      name,
			Labels: map[string]string{
				fleetv1alpha1.FleetStageLabel: fs.Name,
				steps.FreightLabel:            steps.FreightLabelValue(freight.Name),
			},
			Annotations: map[string]string{steps.ReasonAnnotation: "requested with kargo-fleet rollback"},
		},
		Spec: fleetv1alpha1.FleetRolloutSpec{
			FleetStage: fs.Name,
			Freight:    freight,
			Direction:  fleetv1alpha1.DirectionRollback,
			RollbackOf: of.Name,
			Intent:     fleetv1alpha1.IntentRun,
			Actor:      whoAmI(ctx, c),
		},
	}
	if o.dryRun {
		_, err := fmt.Fprintf(o.out, "Would create FleetRollout %s: Rollback of %s to Freight %s, by %s (dry run).\n",
			ro.Name, of.Name, shortFreight(freight.Name), ro.Spec.Actor)
		return err
	}
	if err := c.Create(ctx, ro); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("FleetRollout %q was created meanwhile: run `kargo-fleet status %s -n %s`", name, fs.Name, fs.Namespace)
		}
		return fmt.Errorf("error creating FleetRollout %q: %w", name, err)
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

// rollbackName is "<rollbackOf>-rb", the name the controller gives an
// automatic rollback too, or "-rb-2", "-rb-3", ... when earlier rollbacks of
// the same rollout took it. It fits a label value (target Promotions carry
// the rollout's name in a label): a long name is cut and ends with a hash of
// the full one, as the controller does.
func rollbackName(of string, all []fleetv1alpha1.FleetRollout) string {
	taken := map[string]bool{}
	for i := range all {
		taken[all[i].Name] = true
	}
	sum := sha256.Sum256([]byte(of))
	hash := hex.EncodeToString(sum[:])[:8]
	for n := 1; ; n++ {
		suffix := rollbackSuffix
		if n > 1 {
			suffix = fmt.Sprintf("%s-%d", rollbackSuffix, n)
		}
		name := of + suffix
		if len(name) > validation.LabelValueMaxLength {
			keep := validation.LabelValueMaxLength - len(suffix) - len(hash) - 1
			name = strings.TrimRight(of[:keep], "-.") + suffix + "-" + hash
		}
		if !taken[name] {
			return name
		}
	}
}
