package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetplan"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// planOptions configures `kargo-fleet plan`.
type planOptions struct {
	kube        kubeOptions
	fleetStage  string
	file        string
	local       bool
	targetsFile string
	diffAgainst string
	output      *outputOptions
	maxNames    int
	// freight, when set, checks the plan against the FreightPolicies.
	freight string
	// inventoryNS are the namespaces sources may read inventory from, as
	// the controller's --inventory-namespaces.
	inventoryNS []string

	streams genericiooptions.IOStreams
	// width is the width of the terminal the table is written to (0:
	// unknown, no limit).
	width int
}

func newPlanCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &planOptions{kube: kube, output: newOutputOptions(true, false), streams: streams, width: terminalWidth(streams.Out)}
	cmd := &cobra.Command{
		Use:   "plan [FLEETSTAGE | -f FLEETSTAGE.yaml [--local]]",
		Short: "Show a FleetStage's waves, or what a changed FleetStage file would move",
		Long: "Plans a FleetStage's waves with the planner the controller uses, over the targets its inventory " +
			"sources list in the cluster now: which targets are selected, excluded or unassigned, which wave each " +
			"joins, and the resolved concurrency, failure thresholds, deadlines, soak and approval per wave " +
			"(-o wide shows them all).\n\n" +
			"With --freight, also checks that Freight against the FreightPolicies governing the Project: which " +
			"targets it is blocked on, by which rules, and whether their waves hold (docs/policy.md).\n\n" +
			"With -f, plans the FleetStage in the file against the one of the same name in the cluster, both over " +
			"the cluster's inventory, and lists what would move: waves added, removed or resolved differently, and " +
			"targets that would change waves, join or leave the fleet. A FleetStage not in the cluster yet has " +
			"every target join.\n\n" +
			"With --local, nothing is read from the cluster: the file is validated as the admission webhook does " +
			"and planned over its inline targets and --targets (a YAML list of {name, labels, params}, or an " +
			"object with a targets list); sources that need a cluster are skipped with a warning. --diff-against " +
			"plans another version of the file over the same targets and lists the targets that would change " +
			"waves.",
		Example: "  kargo-fleet plan prod -n shop\n" +
			"  kargo-fleet plan prod -n shop --freight 3f2a9c1\n" +
			"  kargo-fleet plan -f prod.yaml -n shop\n" +
			"  kargo-fleet plan -f examples/fleetstage/edge-inline.yaml --local\n" +
			"  kargo-fleet plan -f prod-new.yaml --local --targets clusters.yaml \\\n" +
			"    --diff-against prod.yaml -o json",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	o.kube.completeFleetFlags(cmd)
	return cmd
}

func (o *planOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "FleetStage YAML file (- for stdin): plan it against the cluster's.")
	f.BoolVar(&o.local, "local", false, "Plan the -f file offline, over its inline targets and --targets only.")
	f.StringSliceVar(&o.inventoryNS, "inventory-namespaces", inventory.DefaultNamespaces,
		"Namespaces the FleetStage's sources may read inventory from besides its own, as the controller's flag of the "+
			"same name (set it to what your installation's controller.inventoryNamespaces says).")
	f.StringVar(&o.targetsFile, "targets", "", "With --local: YAML file of extra inline targets, a list of {name, labels, params}.")
	f.StringVar(&o.diffAgainst, "diff-against", "", "With --local: another FleetStage YAML file; show which targets change waves from it.")
	f.StringVar(&o.freight, "freight", "", "Check this Freight against the FreightPolicies governing the Project: "+
		"which targets it is blocked on, by which rules, and whether their waves hold (docs/policy.md).")
	f.IntVar(&o.maxNames, "max-names", 10, "Target names shown per wave in text output; 0 shows all that fit.")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("targets", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("diff-against", "yaml", "yml", "json")
}

func (o *planOptions) validate() error {
	switch {
	case o.fleetStage != "" && o.file != "":
		return errors.New("name a FleetStage of the cluster or give -f, not both")
	case o.local && o.file == "":
		return errors.New("--local plans a file: -f FLEETSTAGE.yaml is required")
	case !o.local && o.targetsFile != "":
		return errors.New("--targets gives the targets of an offline plan: add --local")
	case !o.local && o.diffAgainst != "":
		return errors.New("--diff-against compares two files offline: add --local (without it, -f is compared " +
			"with the cluster's FleetStage)")
	case o.maxNames < 0:
		return errors.New("--max-names must not be negative")
	case o.freight != "" && o.fleetStage == "":
		return errors.New("--freight checks a FleetStage of the cluster against the FreightPolicies: name it " +
			"(kargo-fleet plan FLEETSTAGE --freight FREIGHT)")
	}
	return o.output.validate()
}

func (o *planOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case o.local:
		return o.runLocal()
	case o.file != "":
		return o.runFileAgainstCluster(ctx)
	}
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	p, err := clusterPlan(ctx, c, fs, o.inventoryNS)
	if err != nil {
		return err
	}
	if o.freight == "" {
		return o.printPlan(p)
	}
	f, err := resolveFreight(ctx, c, fs.Namespace, o.freight)
	if err != nil {
		return err
	}
	pc, err := checkFreightPolicies(ctx, c, fs, f.Name, p)
	if err != nil {
		return err
	}
	if !o.output.text() {
		return o.output.printValue(o.streams.Out, planWithPolicy{Plan: plan.NewPlanPreview(p), FreightPolicy: pc})
	}
	if err := o.printPlan(p); err != nil {
		return err
	}
	return renderPolicyCheck(o.streams.Out, pc)
}

// runFileAgainstCluster plans the file's FleetStage and the cluster's one
// of the same name over the cluster's inventory, and prints what moves.
func (o *planOptions) runFileAgainstCluster(ctx context.Context) error {
	c, ns, err := o.kube.connect()
	if err != nil {
		return withLocalHint(err)
	}
	fs, err := o.loadFleetStage(o.file)
	if err != nil {
		return err
	}
	if fs.Namespace == "" {
		fs.Namespace = ns
	}
	if _, err := compileFleetStage(fs); err != nil {
		return err
	}
	newPlan, err := clusterPlan(ctx, c, fs, o.inventoryNS)
	if err != nil {
		return withLocalHint(err)
	}
	current := &fleetv1alpha1.FleetStage{}
	oldPlan := &plan.WavePlan{}
	against := fmt.Sprintf("FleetStage %s/%s in the cluster", fs.Namespace, fs.Name)
	switch err := c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: fs.Name}, current); {
	case apierrors.IsNotFound(err):
		against = fmt.Sprintf("no FleetStage %s/%s in the cluster yet", fs.Namespace, fs.Name)
	case err != nil:
		return fmt.Errorf("error getting FleetStage %q in namespace %q: %w", fs.Name, fs.Namespace, err)
	default:
		if oldPlan, err = clusterPlan(ctx, c, current, o.inventoryNS); err != nil {
			return fmt.Errorf("the cluster's FleetStage: %w", err)
		}
	}
	d := plan.Diff(oldPlan, newPlan)
	if !o.output.text() {
		return o.output.printValue(o.streams.Out, d)
	}
	if _, err := fmt.Fprintf(o.streams.Out, "Plan of %s against %s:\n", o.file, against); err != nil {
		return err
	}
	return plan.RenderDiffTable(o.streams.Out, &d)
}

// clusterPlan plans a FleetStage over the inventory its sources list in
// the cluster, as the controller plans it (the Project's team scoping
// included). The inventory is read with the user's rights, from the
// FleetStage's namespace and inventoryNS.
func clusterPlan(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage, inventoryNS []string) (*plan.WavePlan, error) {
	fp, err := fleetplan.Plan(ctx, c, inventory.NewReader(c).WithNamespaces(inventory.NewNamespacePolicy(nonEmpty(inventoryNS))), fs)
	if err != nil {
		return nil, fmt.Errorf("error planning FleetStage %s/%s: %w", fs.Namespace, fs.Name, err)
	}
	return fp.Plan, nil
}

// runLocal plans the file offline, over inline targets only.
func (o *planOptions) runLocal() error {
	fs, err := o.loadFleetStage(o.file)
	if err != nil {
		return err
	}
	var extra []fleetv1alpha1.InlineTarget
	if o.targetsFile != "" {
		if extra, err = o.loadTargets(o.targetsFile); err != nil {
			return err
		}
	}
	p, err := o.planLocal(o.file, fs, extra)
	if err != nil {
		return err
	}
	if o.diffAgainst == "" {
		if err := o.printPlan(p); err != nil {
			return err
		}
		if p.Members() == 0 {
			// A file whose selectors take nothing is a mistake a pipeline
			// checking it offline must see.
			return fmt.Errorf("%s: the plan selects no target", o.file)
		}
		return nil
	}
	oldFS, err := o.loadFleetStage(o.diffAgainst)
	if err != nil {
		return err
	}
	oldPlan, err := o.planLocal(o.diffAgainst, oldFS, extra)
	if err != nil {
		return fmt.Errorf("--diff-against: %w", err)
	}
	d := plan.Diff(oldPlan, p)
	if !o.output.text() {
		return o.output.printValue(o.streams.Out, d)
	}
	if _, err := fmt.Fprintf(o.streams.Out, "Plan of %s against %s:\n", o.file, o.diffAgainst); err != nil {
		return err
	}
	return plan.RenderDiffTable(o.streams.Out, &d)
}

// printPlan prints one plan as -o asks.
func (o *planOptions) printPlan(p *plan.WavePlan) error {
	if !o.output.text() {
		return o.output.printValue(o.streams.Out, plan.NewPlanPreview(p))
	}
	return plan.RenderPlanTable(o.streams.Out, p, plan.TableOptions{MaxNames: o.maxNames, Wide: o.output.isWide(),
		Width: o.width})
}

// compileFleetStage validates a FleetStage's spec as the admission webhook
// does, naming every invalid field.
func compileFleetStage(fs *fleetv1alpha1.FleetStage) (*plan.Planner, error) {
	planner, errs := plan.Compile(&fs.Spec)
	if len(errs) > 0 {
		lines := make([]string, 0, len(errs))
		for _, e := range errs {
			lines = append(lines, "  "+e.Error())
		}
		return nil, fmt.Errorf("FleetStage %q is invalid:\n%s", fs.Name, strings.Join(lines, "\n"))
	}
	return planner, nil
}

// planLocal validates the FleetStage and plans it over its inline targets
// and the extra ones.
func (o *planOptions) planLocal(path string, fs *fleetv1alpha1.FleetStage, extra []fleetv1alpha1.InlineTarget) (*plan.WavePlan, error) {
	planner, err := compileFleetStage(fs)
	if err != nil {
		return nil, err
	}
	var candidates []plan.Target
	for i := range fs.Spec.Targets.Sources {
		src := &fs.Spec.Targets.Sources[i]
		if src.Kind == fleetv1alpha1.InlineSource {
			candidates = append(candidates, inventory.FromInline(src.Inline)...)
			continue
		}
		_, _ = fmt.Fprintf(o.streams.ErrOut, "warning: %s: spec.targets.sources[%d] (%s) needs a cluster and is skipped; "+
			"pass its targets with --targets\n", path, i, src.Kind)
	}
	candidates = append(candidates, inventory.FromInline(extra)...)
	if len(candidates) == 0 {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "warning: %s: no targets: the file has no inline targets and --targets gave none\n", path)
	}
	ns := fs.Namespace
	if ns == "" {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "warning: %s: no namespace in the file or -n: the wave order of count-capped "+
			"waves may differ from the one the controller computes in the FleetStage's Project\n", path)
	}
	return planner.Plan(plan.PlanInput{Seed: ns + "/" + fs.Name, Candidates: candidates}), nil
}

// loadFleetStage reads the first FleetStage of a YAML file (other documents,
// such as the Stages of an example, are skipped).
func (o *planOptions) loadFleetStage(path string) (*fleetv1alpha1.FleetStage, error) {
	raw, err := o.readFile(path)
	if err != nil {
		return nil, err
	}
	return decodeFleetStage(raw, path, o.kube.namespaceFlag())
}

// decodeFleetStage returns the first FleetStage of a YAML stream; namespace
// is the FleetStage's namespace when it names none.
func decodeFleetStage(raw []byte, path, namespace string) (*fleetv1alpha1.FleetStage, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s holds no FleetStage (kind: FleetStage, apiVersion: %s)", path,
				fleetv1alpha1.GroupVersion)
		}
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", path, err)
		}
		var obj any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("error parsing %s: %w", path, err)
		}
		meta, _ := obj.(map[string]any)
		if meta["kind"] != "FleetStage" {
			continue
		}
		if meta["apiVersion"] != fleetv1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: FleetStage apiVersion %v is not %q", path, meta["apiVersion"], fleetv1alpha1.GroupVersion)
		}
		fs := &fleetv1alpha1.FleetStage{}
		if err := yaml.UnmarshalStrict(doc, fs); err != nil {
			return nil, fmt.Errorf("error parsing the FleetStage in %s: %w", path, err)
		}
		if fs.Namespace == "" {
			fs.Namespace = namespace
		}
		return fs, nil
	}
}

// readFile reads an input file; "-" is standard input.
func (o *planOptions) readFile(path string) ([]byte, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(o.streams.In)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
	return raw, nil
}

// loadTargets reads inline targets: a YAML list, or an object whose
// `targets` field is the list.
func (o *planOptions) loadTargets(path string) ([]fleetv1alpha1.InlineTarget, error) {
	raw, err := o.readFile(path)
	if err != nil {
		return nil, err
	}
	return decodeTargets(raw, path)
}

// decodeTargets decodes inline targets: a YAML list, or an object whose
// `targets` field is the list.
func decodeTargets(raw []byte, path string) ([]fleetv1alpha1.InlineTarget, error) {
	var list []fleetv1alpha1.InlineTarget
	if err := yaml.UnmarshalStrict(raw, &list); err == nil {
		return list, nil
	}
	var wrapped struct {
		Targets []fleetv1alpha1.InlineTarget `json:"targets"`
	}
	if err := yaml.UnmarshalStrict(raw, &wrapped); err != nil {
		return nil, fmt.Errorf("error parsing %s: want a list of {name, labels, params} or {targets: [...]}: %w", path, err)
	}
	return wrapped.Targets, nil
}

// withLocalHint adds, to an error that did not come from an API server's
// answer (no kubeconfig, no cluster reachable), the way to plan offline.
func withLocalHint(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return fmt.Errorf("%w\n(no cluster? --local plans the file offline, over its inline targets and --targets)", err)
}
