package render

import (
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// PromotionGuardConditionName names the match condition kargo-fleet keeps
// on its Promotion admission webhooks.
const PromotionGuardConditionName = "fleet-stages.kargo-fleet.io"

// GuardedStages are the Stages of one fleet whose Promotions the admission
// guard must see: the adopted template Stage and the wave Stages by name,
// and every target Stage by its name's prefix "<fleetstage>." (the dot
// occurs in no wave Stage and no FleetStage name, and TargetStageName keeps
// the prefix when it shortens a name).
type GuardedStages struct {
	// Namespace is the fleet's Project.
	Namespace string
	// Names are Stage names guarded exactly, sorted.
	Names []string
	// Prefix is the prefix of the target Stages' names.
	Prefix string
}

// FleetGuardedStages returns the Stages a FleetStage generates or adopts:
// its template Stage, the wave Stages of its spec and those its status
// still reports (a wave removed from the spec keeps its Stage until it is
// pruned), and its target Stages.
func FleetGuardedStages(fs *fleetv1alpha1.FleetStage) GuardedStages {
	names := make([]string, 0, 1+len(fs.Spec.Waves)+len(fs.Status.Waves))
	if fs.Spec.Stage.FromStage != "" {
		names = append(names, fs.Spec.Stage.FromStage)
	}
	for _, w := range fs.Spec.Waves {
		names = append(names, WaveStageName(fs.Name, w.Name))
	}
	for _, w := range fs.Status.Waves {
		if w.Stage != "" {
			names = append(names, w.Stage)
		}
	}
	slices.Sort(names)
	return GuardedStages{Namespace: fs.Namespace, Names: slices.Compact(names), Prefix: fs.Name + "."}
}

// Covers reports whether g guards every Stage of want.
func (g GuardedStages) Covers(want GuardedStages) bool {
	if g.Namespace != want.Namespace || g.Prefix != want.Prefix {
		return false
	}
	for _, n := range want.Names {
		if _, ok := slices.BinarySearch(g.Names, n); !ok {
			return false
		}
	}
	return true
}

// PromotionGuardCondition returns the CEL match condition that sends a
// Promotion to the admission guard only when it is for a Stage of one of
// the fleets: "<namespace>/<stage>" is one of the exact names, or starts
// with a fleet's target prefix. A Promotion's spec.stage names the very
// Stage Kargo promotes, and the fleet's Stage names are decided by
// kargo-fleet, so no Promotion into a fleet Stage escapes the condition,
// whatever it is called; a Stage outside the fleets never reaches the
// guard. Without any fleet the condition is false.
func PromotionGuardCondition(fleets []GuardedStages) admissionregistrationv1.MatchCondition {
	var names, prefixes []string
	for _, g := range fleets {
		for _, n := range g.Names {
			names = append(names, g.Namespace+"/"+n)
		}
		prefixes = append(prefixes, g.Namespace+"/"+g.Prefix)
	}
	slices.Sort(names)
	slices.Sort(prefixes)
	names, prefixes = slices.Compact(names), slices.Compact(prefixes)
	expr := "false"
	if len(prefixes) > 0 {
		var b strings.Builder
		b.WriteString("has(object.spec) && has(object.spec.stage) && ")
		b.WriteString("((request.namespace + '/' + object.spec.stage) in ")
		writeCELList(&b, names)
		b.WriteString(" || ")
		writeCELList(&b, prefixes)
		b.WriteString(".exists(p, (request.namespace + '/' + object.spec.stage).startsWith(p)))")
		expr = b.String()
	}
	return admissionregistrationv1.MatchCondition{Name: PromotionGuardConditionName, Expression: expr}
}

// writeCELList writes a CEL list of string literals.
func writeCELList(b *strings.Builder, items []string) {
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		// Go's quoting is a valid CEL string literal for the characters of
		// Kubernetes names.
		b.WriteString(strconv.Quote(s))
	}
	b.WriteByte(']')
}
