package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// TargetList is every target of a FleetStage with its generated Stage. Its
// JSON and YAML forms are what `kargo-fleet targets -o json|yaml` prints, so
// per-target Argo CD Applications can be generated from it.
type TargetList struct {
	// Project is the Kargo Project (namespace) of the FleetStage.
	Project string `json:"project"`
	// FleetStage is the FleetStage's name.
	FleetStage string `json:"fleetStage"`
	// Targets are the targets in wave order, then by Stage name.
	Targets []Target `json:"targets"`
}

// Target is one target and its generated target Stage.
type Target struct {
	// Stage is the target Stage's name.
	Stage string `json:"stage"`
	// AuthorizedStage is the value an Argo CD Application's
	// kargo.akuity.io/authorized-stage annotation must hold (or list) for
	// this target's Stage to update it: "<project>:<stage>".
	AuthorizedStage string `json:"authorizedStage"`
	// Name is the target's name as its inventory spells it; ID is its
	// label-safe form (the fleet.kargo-fleet.io/target label of its Stage).
	Name string `json:"name"`
	ID   string `json:"id"`
	// Source is the inventory kind the target came from, when known.
	Source string `json:"source,omitempty"`
	// Wave is the target's wave.
	Wave string `json:"wave"`
	// Shard is the Kargo shard of the target's Stage ("" the default
	// controller).
	Shard string `json:"shard,omitempty"`
	// Labels are the target's inventory labels, when they could be read.
	Labels map[string]string `json:"labels,omitempty"`
	// Params are the target's parameters: as its inventory holds them, or,
	// when the inventory could not be read, as its Stage's variables.
	Params map[string]string `json:"params,omitempty"`
	// Freight is the Freight the target runs (none yet: empty).
	Freight []FreightName `json:"freight,omitempty"`
}

// TargetsInput is what BuildTargets reads.
type TargetsInput struct {
	// FleetStage is the fleet; its spec gives the wave order.
	FleetStage *fleetv1alpha1.FleetStage
	// Stages are the FleetStage's generated Stages (any role; only target
	// Stages are listed, and none that is being pruned).
	Stages []kargo.Stage
	// Inventory holds the fleet's targets by ID as the inventory reads them;
	// nil when it could not be read.
	Inventory map[string]plan.Target
	// Aliases maps Freight names to their aliases, where known.
	Aliases map[string]string
}

// BuildTargets lists the target Stages of in.FleetStage.
func BuildTargets(in TargetsInput) TargetList {
	fs := in.FleetStage
	out := TargetList{Project: fs.Namespace, FleetStage: fs.Name, Targets: []Target{}}
	waveRank := map[string]int{}
	for i, w := range fs.Spec.Waves {
		waveRank[w.Name] = i
	}
	for i := range in.Stages {
		st := &in.Stages[i]
		if st.Labels[fleetv1alpha1.RoleLabel] != fleetv1alpha1.RoleTarget || st.Labels[fleetv1alpha1.FleetStageLabel] != fs.Name {
			continue
		}
		if _, pruning := st.Annotations[fleetv1alpha1.PruneAnnotation]; pruning {
			continue
		}
		id := st.Labels[fleetv1alpha1.TargetLabel]
		t := Target{
			Stage:           st.Name,
			AuthorizedStage: fs.Namespace + ":" + st.Name,
			Name:            cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], id),
			ID:              id,
			Wave:            st.Labels[fleetv1alpha1.WaveLabel],
			Shard:           st.Spec.Shard,
		}
		if inv, ok := in.Inventory[id]; ok {
			t.Source, t.Labels, t.Params = inv.Source, maps.Clone(inv.Labels), maps.Clone(inv.Params)
		} else {
			t.Source, t.Params = stageParams(st.Spec.Vars)
		}
		for _, f := range st.CurrentFreightNames() {
			t.Freight = append(t.Freight, freightName(f, in.Aliases))
		}
		out.Targets = append(out.Targets, t)
	}
	slices.SortFunc(out.Targets, func(a, b Target) int {
		ra, oka := waveRank[a.Wave]
		rb, okb := waveRank[b.Wave]
		if !oka {
			ra = len(waveRank)
		}
		if !okb {
			rb = len(waveRank)
		}
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a.Wave, b.Wave), cmp.Compare(a.Stage, b.Stage))
	})
	return out
}

// stageParams reads a target Stage's source and params back from its
// variables: the params are the variables after the fleet's own (see
// render.Stages), under their sanitised names.
func stageParams(vars []kargo.ExpressionVariable) (string, map[string]string) {
	source := ""
	params := map[string]string{}
	afterFleetVars := false
	for _, v := range vars {
		if afterFleetVars {
			params[v.Name] = v.Value
			continue
		}
		if v.Name == render.VarTargetSource {
			source, afterFleetVars = v.Value, true
		}
	}
	if len(params) == 0 {
		params = nil
	}
	return source, params
}

// Filter keeps the targets in the given wave ("" for all) whose labels
// match sel (nil for all).
func (l TargetList) Filter(wave string, sel labels.Selector) TargetList {
	out := l
	out.Targets = []Target{}
	for _, t := range l.Targets {
		if wave != "" && t.Wave != wave {
			continue
		}
		if sel != nil && !sel.Matches(labels.Set(t.Labels)) {
			continue
		}
		out.Targets = append(out.Targets, t)
	}
	return out
}

// RenderTargetsJSON writes the list as indented JSON.
func RenderTargetsJSON(w io.Writer, l TargetList) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}

// RenderTargetsYAML writes the list as YAML.
func RenderTargetsYAML(w io.Writer, l TargetList) error {
	raw, err := yaml.Marshal(l)
	if err != nil {
		return fmt.Errorf("error encoding targets as YAML: %w", err)
	}
	_, err = w.Write(raw)
	return err
}

// RenderTargetsTable writes one line per target: Stage, target, wave,
// shard (when some target is on one) and Freight; wide adds the source,
// labels and params.
func RenderTargetsTable(w io.Writer, l TargetList, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sharded := slices.ContainsFunc(l.Targets, func(t Target) bool { return t.Shard != "" })
	header := "STAGE\tTARGET\tWAVE\tFREIGHT"
	if sharded {
		header = "STAGE\tTARGET\tWAVE\tSHARD\tFREIGHT"
	}
	if wide {
		header += "\tSOURCE\tLABELS\tPARAMS"
	}
	if _, err := fmt.Fprintln(tw, header); err != nil {
		return err
	}
	for _, t := range l.Targets {
		freight := make([]string, 0, len(t.Freight))
		for _, f := range t.Freight {
			freight = append(freight, freightLabel(f))
		}
		cols := []string{t.Stage, t.Name, t.Wave, cmp.Or(strings.Join(freight, ","), "<none>")}
		if sharded {
			cols = slices.Insert(cols, 3, plan.DisplayShard(t.Shard))
		}
		line := strings.Join(cols, "\t")
		if wide {
			line += "\t" + strings.Join([]string{cmp.Or(t.Source, "<unknown>"), pairs(t.Labels), pairs(t.Params)}, "\t")
		}
		if _, err := fmt.Fprintln(tw, line); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// freightLabel shows a Freight by alias when it has one, else by its short
// name.
func freightLabel(f FreightName) string {
	if f.Alias != "" {
		return f.Alias
	}
	if len(f.Name) == 40 {
		return f.Name[:7]
	}
	return f.Name
}

// pairs writes a map as sorted k=v pairs, "<none>" when empty.
func pairs(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := slices.Sorted(maps.Keys(m))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ",")
}
