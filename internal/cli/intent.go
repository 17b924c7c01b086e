package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// intentOptions configures the verbs that set spec.intent on a FleetStage's
// unfinished FleetRollouts: pause, resume and abort.
type intentOptions struct {
	kube       kubeOptions
	fleetStage string
	rollout    string
	dryRun     bool
	output     *outputOptions

	// verb is the command's name; intent is what it sets; from says which
	// intents it changes (others are reported and left alone).
	verb   string
	intent fleetv1alpha1.RolloutIntent
	from   []fleetv1alpha1.RolloutIntent
	// after is printed when something changed: what happens next.
	after string
	// spareRollbacks leaves rollbacks alone unless --rollout names one: a
	// rollback is what returns the fleet to safety, so stopping the fleet's
	// rollouts does not stop it.
	spareRollbacks bool

	streams genericiooptions.IOStreams
}

// intentOutputHelp is what -o does for the intent verbs.
const intentOutputHelp = "\n\n-o name, json, yaml or a template prints the FleetRollouts whose intent is now (or, with " +
	"--dry-run, would be) the one asked for, instead of the sentences."

// newIntentCommand returns the cobra command of one intent verb.
func newIntentCommand(o *intentOptions, short, long string) *cobra.Command {
	o.output = newOutputOptions(false, true)
	cmd := &cobra.Command{
		Use:   o.verb + " [FLEETSTAGE]",
		Short: short,
		Long:  long + intentOutputHelp,
		Example: fmt.Sprintf("  kargo-fleet %[1]s prod -n shop\n  kubectl fleet %[1]s prod -n shop --rollout prod-1a2b3c4d5e\n"+
			"  kargo-fleet %[1]s prod -n shop -o name", o.verb),
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *intentOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.rollout, "rollout", "", "Only this FleetRollout (default: every unfinished FleetRollout of the FleetStage).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Say what would change without changing it.")
	_ = cmd.RegisterFlagCompletionFunc("rollout", completeRollouts(&o.kube, unfinished))
}

func (o *intentOptions) validate() error {
	if o.intent == "" || len(o.from) == 0 {
		return fmt.Errorf("%s: no intent configured", o.verb)
	}
	return o.output.validate()
}

func (o *intentOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	all, err := listRollouts(ctx, c, fs)
	if err != nil {
		return err
	}
	targets := o.unfinished(all)
	if len(targets) == 0 {
		return o.reportNone(all, fs)
	}
	// In text mode each rollout gets a sentence; otherwise the rollouts at
	// the asked intent are printed as objects.
	text := io.Discard
	out := newFitWriter(o.streams.Out)
	if o.output.text() {
		text = out
	}
	var atIntent []apiruntime.Object
	actor := ""
	if !o.dryRun {
		actor = whoAmI(ctx, c)
	}
	changed := 0
	for _, ro := range targets {
		at, set, err := o.setOne(ctx, c, fs, ro, text, actor)
		if err != nil {
			return err
		}
		if at {
			atIntent = append(atIntent, ro)
		}
		if set {
			changed++
		}
	}
	if !o.output.text() {
		return o.output.printObjects(o.streams.Out, atIntent...)
	}
	if changed > 0 && o.after != "" && !o.dryRun {
		_, err = fmt.Fprintf(out, o.after+"\n", fs.Name, fs.Namespace)
	}
	return err
}

// unfinished are the rollouts the command acts on: the unfinished ones, or
// only the one --rollout names.
func (o *intentOptions) unfinished(all []fleetv1alpha1.FleetRollout) []*fleetv1alpha1.FleetRollout {
	var targets []*fleetv1alpha1.FleetRollout
	for i := range all {
		ro := &all[i]
		if o.rollout != "" && ro.Name != o.rollout {
			continue
		}
		if !ro.Status.Phase.IsFinal() {
			targets = append(targets, ro)
		}
	}
	return targets
}

// reportNone answers when no rollout is unfinished: an error for a
// --rollout, else nothing to do.
func (o *intentOptions) reportNone(all []fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	if o.rollout != "" {
		return o.explainNoRollout(all, fs)
	}
	if !o.output.text() {
		return o.output.printObjects(o.streams.Out)
	}
	_, err := fmt.Fprintf(newFitWriter(o.streams.Out), "FleetStage %s/%s has no unfinished FleetRollout: nothing to %s.\n",
		fs.Namespace, fs.Name, o.verb)
	return err
}

// setOne sets the intent of one rollout, unless it is a rollback to spare,
// already there or at an intent the verb cannot follow, and says so in text.
// atIntent says the rollout is at the asked intent now, changed that this
// command set it.
func (o *intentOptions) setOne(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage,
	ro *fleetv1alpha1.FleetRollout, text io.Writer, actor string) (atIntent, changed bool, err error) {
	current := cmp.Or(ro.Spec.Intent, fleetv1alpha1.IntentRun)
	switch {
	case o.spareRollbacks && o.rollout == "" && ro.Spec.Direction == fleetv1alpha1.DirectionRollback:
		_, err = fmt.Fprintf(text, "FleetRollout %s (%s): left as it is: it returns the fleet to its last good Freight; "+
			"to %s it anyway: kargo-fleet %s %s -n %s --rollout %s\n", ro.Name, describeRollout(ro), o.verb, o.verb,
			fs.Name, fs.Namespace, ro.Name)
	case current == o.intent:
		atIntent = true
		_, err = fmt.Fprintf(text, "FleetRollout %s (%s): intent already %s\n", ro.Name, describeRollout(ro), o.intent)
	case !slices.Contains(o.from, current):
		_, err = fmt.Fprintf(text, "FleetRollout %s (%s): intent %s left as it is: %s cannot follow it\n",
			ro.Name, describeRollout(ro), current, o.verb)
	default:
		if o.dryRun {
			ro.Spec.Intent = o.intent
		} else if err := setIntent(ctx, c, ro, o.intent, actor); err != nil {
			return false, false, err
		}
		atIntent, changed = true, true
		suffix := ""
		if o.dryRun {
			suffix = " (dry run)"
		}
		_, err = fmt.Fprintf(text, "FleetRollout %s (%s): intent %s -> %s%s\n", ro.Name, describeRollout(ro),
			current, o.intent, suffix)
	}
	return atIntent, changed, err
}

// explainNoRollout is the error for a --rollout that is not unfinished.
func (o *intentOptions) explainNoRollout(all []fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	for i := range all {
		if all[i].Name == o.rollout {
			return fmt.Errorf("FleetRollout %q is %s: a finished rollout cannot be changed", o.rollout, all[i].Status.Phase)
		}
	}
	return fmt.Errorf("FleetRollout %q of FleetStage %q not found in namespace %q", o.rollout, fs.Name, fs.Namespace)
}

// setIntent merge-patches spec.intent, the only field of a FleetRollout's
// spec that may change, and records who changed it in the same write.
func setIntent(ctx context.Context, c client.Client, ro *fleetv1alpha1.FleetRollout, intent fleetv1alpha1.RolloutIntent,
	actor string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{fleetv1alpha1.IntentActorAnnotation: actor}},
		"spec":     map[string]any{"intent": intent},
	})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, ro, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("error setting intent %s on FleetRollout %q: %w", intent, ro.Name, err)
	}
	return nil
}
