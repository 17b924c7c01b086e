package render

import (
	"slices"
	"strings"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Variables every target Stage carries in spec.vars, visible to the
// per-target promotion template as ${{ vars.<name> }}.
const (
	// VarFleetStage holds the FleetStage's name.
	VarFleetStage = "fleetStage"
	// VarWave holds the target's wave.
	VarWave = "fleetWave"
	// VarTarget holds the target's name as its inventory spells it.
	VarTarget = "fleetTarget"
	// VarTargetID holds the target's label-safe ID.
	VarTargetID = "fleetTargetId"
	// VarTargetSource holds the inventory kind the target came from.
	VarTargetSource = "fleetTargetSource"
)

// ParamVarName turns a target parameter key into a Kargo variable name
// (^[a-zA-Z_]\w*$): every other character becomes '_', and a leading digit
// gets a '_' in front. "cluster.server" becomes "cluster_server".
func ParamVarName(key string) string {
	var b strings.Builder
	for i, r := range key {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if i == 0 && r >= '0' && r <= '9' {
			b.WriteByte('_')
		}
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// shardVars are the shard variables of a target Stage: fleetShard when
// shards are managed, fleetStepServerURL when a URL is configured for the
// target's shard.
func shardVars(managed bool, shard string, urls StepServerURLs) []kargo.ExpressionVariable {
	var vars []kargo.ExpressionVariable
	if managed {
		vars = append(vars, kargo.ExpressionVariable{Name: VarShard, Value: shard})
	}
	if url := urls.For(shard); url != "" {
		vars = append(vars, kargo.ExpressionVariable{Name: VarStepServerURL, Value: url})
	}
	return vars
}

// targetVars returns a target Stage's spec.vars: the adopted Stage's own vars
// first, then the fleet variables (shard variables included) and the
// target's params. On a name clash the
// earlier entry wins: the application team's vars are never overridden by
// inventory data, and among params the first key in sorted order wins. The
// skipped names are returned so the clash can be reported.
func targetVars(base []kargo.ExpressionVariable, fleetStage, wave string, t *plan.Target,
	fleetVars []kargo.ExpressionVariable) ([]kargo.ExpressionVariable, []string) {
	vars := make([]kargo.ExpressionVariable, 0, len(base)+5+len(fleetVars)+len(t.Params))
	seen := make(map[string]bool, cap(vars))
	var clashes []string
	add := func(name, value string) {
		if seen[name] {
			clashes = append(clashes, name)
			return
		}
		seen[name] = true
		vars = append(vars, kargo.ExpressionVariable{Name: name, Value: value})
	}
	for _, v := range base {
		add(v.Name, v.Value)
	}
	add(VarFleetStage, fleetStage)
	add(VarWave, wave)
	add(VarTarget, t.Name)
	add(VarTargetID, t.ID)
	for _, v := range fleetVars {
		add(v.Name, v.Value)
	}
	// fleetTargetSource stays the last fleet variable: what follows it are
	// the target's params (report.stageParams reads them back).
	add(VarTargetSource, t.Source)
	keys := make([]string, 0, len(t.Params))
	for k := range t.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(ParamVarName(k), t.Params[k])
	}
	return vars, clashes
}
