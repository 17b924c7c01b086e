package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// planOptions configures `kargo-fleet plan`.
type planOptions struct {
	file        string
	targetsFile string
	diffAgainst string
	namespace   string
	output      string
	maxNames    int

	out, errOut io.Writer
	// readFile reads the input files (os.ReadFile; "-" is stdin).
	readFile func(string) ([]byte, error)
}

func newPlanCommand(in io.Reader, out, errOut io.Writer) *cobra.Command {
	o := &planOptions{out: out, errOut: errOut, readFile: func(path string) ([]byte, error) {
		if path == "-" {
			return io.ReadAll(in)
		}
		return os.ReadFile(path)
	}}
	cmd := &cobra.Command{
		Use:   "plan -f FLEETSTAGE.yaml [--targets TARGETS.yaml] [--diff-against OTHER.yaml]",
		Short: "Preview a FleetStage's waves offline, without a cluster",
		Long: "Validates a FleetStage file as the admission webhook does and plans its waves with the planner the " +
			"controller uses: which targets are selected, excluded or unassigned, which wave each joins, and the " +
			"resolved concurrency, failure thresholds, deadlines, soak and approval per wave.\n\n" +
			"Targets come from the file's inline sources and from --targets (a YAML list of {name, labels, " +
			"params}, or an object with a `targets` list); sources that need a cluster (Argo CD clusters, Kargo " +
			"Targets, ClusterProfiles) are skipped with a warning. --diff-against plans another version of the " +
			"FleetStage over the same targets and lists the targets that would change waves.",
		Example: "  kargo-fleet plan -f examples/fleetstage/edge-inline.yaml\n" +
			"  kargo-fleet plan -f prod.yaml --targets clusters.yaml -o json\n" +
			"  kargo-fleet plan -f prod-new.yaml --targets clusters.yaml --diff-against prod.yaml",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run()
		},
	}
	o.addFlags(cmd)
	return cmd
}

func (o *planOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "FleetStage YAML file (- for stdin).")
	f.StringVar(&o.targetsFile, "targets", "", "YAML file of extra inline targets: a list of {name, labels, params}.")
	f.StringVar(&o.diffAgainst, "diff-against", "", "Another FleetStage YAML file: show which targets change waves from it.")
	f.StringVarP(&o.namespace, "namespace", "n", "",
		"Namespace (Kargo Project) when the file has none; with the name it seeds the stable wave order.")
	f.StringVarP(&o.output, "output", "o", outputText, "Output format: text or json.")
	f.IntVar(&o.maxNames, "max-names", 10, "Target names shown per wave in text output; 0 shows all.")
}

func (o *planOptions) validate() error {
	if o.file == "" {
		return errors.New("-f FLEETSTAGE.yaml is required")
	}
	switch o.output {
	case outputText, outputJSON:
	default:
		return fmt.Errorf("--output %q: use text or json", o.output)
	}
	if o.maxNames < 0 {
		return errors.New("--max-names must not be negative")
	}
	return nil
}

func (o *planOptions) run() error {
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
	p, err := o.plan(o.file, fs, extra)
	if err != nil {
		return err
	}
	if o.diffAgainst == "" {
		if o.output == outputJSON {
			return plan.RenderPlanJSON(o.out, p)
		}
		return plan.RenderPlanTable(o.out, p, o.maxNames)
	}
	oldFS, err := o.loadFleetStage(o.diffAgainst)
	if err != nil {
		return err
	}
	oldPlan, err := o.plan(o.diffAgainst, oldFS, extra)
	if err != nil {
		return fmt.Errorf("--diff-against: %w", err)
	}
	d := plan.Diff(oldPlan, p)
	if o.output == outputJSON {
		return plan.RenderDiffJSON(o.out, &d)
	}
	if _, err := fmt.Fprintf(o.out, "Plan of %s against %s:\n", o.file, o.diffAgainst); err != nil {
		return err
	}
	return plan.RenderDiffTable(o.out, &d)
}

// plan validates the FleetStage and plans it over its inline targets and
// the extra ones.
func (o *planOptions) plan(path string, fs *fleetv1alpha1.FleetStage, extra []fleetv1alpha1.InlineTarget) (*plan.WavePlan, error) {
	planner, errs := plan.Compile(&fs.Spec)
	if len(errs) > 0 {
		lines := make([]string, 0, len(errs))
		for _, e := range errs {
			lines = append(lines, "  "+e.Error())
		}
		return nil, fmt.Errorf("FleetStage %q is invalid:\n%s", fs.Name, strings.Join(lines, "\n"))
	}
	var candidates []plan.Target
	for i := range fs.Spec.Targets.Sources {
		src := &fs.Spec.Targets.Sources[i]
		if src.Kind == fleetv1alpha1.InlineSource {
			candidates = append(candidates, inventory.FromInline(src.Inline)...)
			continue
		}
		_, _ = fmt.Fprintf(o.errOut, "warning: %s: spec.targets.sources[%d] (%s) needs a cluster and is skipped; "+
			"pass its targets with --targets\n", path, i, src.Kind)
	}
	candidates = append(candidates, inventory.FromInline(extra)...)
	if len(candidates) == 0 {
		_, _ = fmt.Fprintf(o.errOut, "warning: %s: no targets: the file has no inline targets and --targets gave none\n", path)
	}
	ns := cmp.Or(fs.Namespace, o.namespace)
	if ns == "" {
		_, _ = fmt.Fprintf(o.errOut, "warning: %s: no namespace in the file or -n: the wave order of count-capped "+
			"waves may differ from the one the controller computes in the FleetStage's Project\n", path)
	}
	return planner.Plan(plan.PlanInput{Seed: ns + "/" + fs.Name, Candidates: candidates}), nil
}

// loadFleetStage reads the first FleetStage of a YAML file (other documents,
// such as the Stages of an example, are skipped).
func (o *planOptions) loadFleetStage(path string) (*fleetv1alpha1.FleetStage, error) {
	raw, err := o.readFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
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
			fs.Namespace = o.namespace
		}
		return fs, nil
	}
}

// loadTargets reads inline targets: a YAML list, or an object whose
// `targets` field is the list.
func (o *planOptions) loadTargets(path string) ([]fleetv1alpha1.InlineTarget, error) {
	raw, err := o.readFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
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
