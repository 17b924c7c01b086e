package report

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

// Rollout roles: why a rollout is in the report.
const (
	// RoleCurrent is the FleetStage's status.currentRollout.
	RoleCurrent = "current"
	// RoleLast is the FleetStage's status.lastRollout.
	RoleLast = "last"
	// RoleActive is another rollout that has not reached a final phase
	// (e.g. a rollback running beside a halted forward rollout).
	RoleActive = "active"
	// RoleRolledBack is a rollout a shown rollback returns.
	RoleRolledBack = "rolled back"
	// RoleOther is any other rollout passed in.
	RoleOther = "other"
)

// Input is what a report is built from.
type Input struct {
	// FleetStage is the fleet; required.
	FleetStage *fleetv1alpha1.FleetStage
	// Rollouts are the FleetRollouts to show, in any order. Build orders
	// them: current first, then other unfinished ones, then the last
	// finished one, then the rest, newest first.
	Rollouts []fleetv1alpha1.FleetRollout
	// Aliases maps Freight names to their Kargo aliases, where known.
	Aliases map[string]string
	// Recovery, when set, is the command that returns every target to the
	// last good Freight, and why it is needed.
	Recovery *Recovery
}

// Recovery names the command that returns a fleet to its last good
// Freight after an abort, a pause or a failure.
type Recovery struct {
	// Command is the kargo-fleet command line.
	Command string `json:"command"`
	// Reason says why the fleet needs it.
	Reason string `json:"reason"`
	// Freight is the last good Freight the targets return to.
	Freight FreightName `json:"freight"`
}

// Report is the operator's view of one FleetStage. Its JSON form is what
// `kargo-fleet status -o json` prints.
type Report struct {
	// FleetStage summarises the fleet.
	FleetStage Fleet `json:"fleetStage"`
	// Rollouts are the rollouts shown, most relevant first.
	Rollouts []Rollout `json:"rollouts"`
	// Recovery is the command that returns every target to the last good
	// Freight; nil when the fleet needs none.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Fleet summarises a FleetStage's status.
type Fleet struct {
	// Namespace (the Kargo Project) and Name identify the FleetStage.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the Ready condition's status (True, False, Unknown; empty
	// before the first reconcile), with its reason and message.
	Ready        string `json:"ready,omitempty"`
	ReadyReason  string `json:"readyReason,omitempty"`
	ReadyMessage string `json:"readyMessage,omitempty"`
	// Targets counts candidate, selected, excluded and unassigned targets.
	Targets fleetv1alpha1.TargetCounts `json:"targets"`
	// Waves are the waves with their Stage and member count.
	Waves []fleetv1alpha1.WaveMembership `json:"waves"`
	// Shards count the targets per Kargo shard, when the FleetStage puts
	// its Stages on shards.
	Shards []fleetv1alpha1.ShardCount `json:"shards,omitempty"`
	// Versions says how many targets run which Freight, largest first.
	Versions []Version `json:"versions"`
	// LastGoodFreight is the newest Freight every wave passed with.
	LastGoodFreight *FreightName `json:"lastGoodFreight,omitempty"`
	// CurrentRollout and LastRollout name the FleetStage's rollouts.
	CurrentRollout string `json:"currentRollout,omitempty"`
	LastRollout    string `json:"lastRollout,omitempty"`
	// Drift counts the targets running Freight the fleet does not intend,
	// with up to 10 examples; nil when none drifted.
	Drift *Drift `json:"drift,omitempty"`
	// Applications is what the targets' Argo CD Applications show that
	// the fleet did not do (status.applications).
	Applications *fleetv1alpha1.ApplicationDriftStatus `json:"applications,omitempty"`
}

// Drift counts drifted targets and names a few.
type Drift struct {
	Count    int32           `json:"count"`
	Examples []DriftedTarget `json:"examples"`
}

// DriftedTarget is one drifted target.
type DriftedTarget struct {
	Target   string      `json:"target"`
	Stage    string      `json:"stage"`
	Freight  FreightName `json:"freight"`
	Intended FreightName `json:"intendedFreight"`
}

// FreightName is a Freight's name with its alias, when known.
type FreightName struct {
	Name  string `json:"name"`
	Alias string `json:"alias,omitempty"`
}

// Version is one entry of the version distribution.
type Version struct {
	// Freight is the Freight; "other" sums Freight past the 20th.
	Freight FreightName `json:"freight"`
	// Targets is how many targets run it.
	Targets int32 `json:"targets"`
}

// Rollout summarises one FleetRollout.
type Rollout struct {
	// Name is the FleetRollout's name; Role says why it is shown.
	Name string `json:"name"`
	Role string `json:"role"`
	// Direction, Freight, RollbackOf, Intent and Actor come from the spec.
	Direction  fleetv1alpha1.RolloutDirection `json:"direction"`
	Freight    FreightName                    `json:"freight"`
	RollbackOf string                         `json:"rollbackOf,omitempty"`
	Intent     fleetv1alpha1.RolloutIntent    `json:"intent"`
	Actor      string                         `json:"actor,omitempty"`
	// Phase and Message come from the status.
	Phase   fleetv1alpha1.RolloutPhase `json:"phase"`
	Message string                     `json:"message,omitempty"`
	// CreatedAt, StartedAt and FinishedAt time the rollout.
	CreatedAt  metav1.Time  `json:"createdAt"`
	StartedAt  *metav1.Time `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Totals sums the waves.
	Totals Totals `json:"totals"`
	// Waves is the per-wave progress in promotion order.
	Waves []fleetv1alpha1.WaveProgress `json:"waves"`
	// Failures groups failed targets by reason.
	Failures []fleetv1alpha1.FailureGroup `json:"failures,omitempty"`
	// Analyses are the waves' analyses that started, in wave order, with
	// each metric's success condition.
	Analyses []WaveAnalysis `json:"analyses,omitempty"`
}

// Totals counts a rollout's targets by state across its waves.
type Totals struct {
	Total     int32 `json:"total"`
	Succeeded int32 `json:"succeeded"`
	Failed    int32 `json:"failed"`
	InFlight  int32 `json:"inFlight"`
	Pending   int32 `json:"pending"`
}

// Build builds the report of in.
func Build(in Input) Report {
	fs := in.FleetStage
	st := &fs.Status
	r := Report{FleetStage: Fleet{
		Namespace:      fs.Namespace,
		Name:           fs.Name,
		Targets:        st.Targets,
		Waves:          slices.Clone(st.Waves),
		Shards:         slices.Clone(st.Shards),
		Versions:       make([]Version, 0, len(st.Versions)),
		CurrentRollout: st.CurrentRollout,
		LastRollout:    st.LastRollout,
	}}
	if r.FleetStage.Waves == nil {
		r.FleetStage.Waves = []fleetv1alpha1.WaveMembership{}
	}
	if c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ReadyCondition); c != nil {
		r.FleetStage.Ready, r.FleetStage.ReadyReason, r.FleetStage.ReadyMessage = string(c.Status), c.Reason, c.Message
	}
	for _, v := range st.Versions {
		r.FleetStage.Versions = append(r.FleetStage.Versions, Version{Freight: freightName(v.Freight, in.Aliases),
			Targets: v.Targets})
	}
	if st.LastGoodFreight != nil {
		n := freightName(st.LastGoodFreight.Name, in.Aliases)
		r.FleetStage.LastGoodFreight = &n
	}

	if st.Drift != nil && st.Drift.Count > 0 {
		r.FleetStage.Drift = &Drift{Count: st.Drift.Count, Examples: make([]DriftedTarget, 0, len(st.Drift.Examples))}
		for _, e := range st.Drift.Examples {
			r.FleetStage.Drift.Examples = append(r.FleetStage.Drift.Examples, DriftedTarget{Target: e.Target, Stage: e.Stage,
				Freight: freightName(e.Freight, in.Aliases), Intended: freightName(e.IntendedFreight, in.Aliases)})
		}
	}

	r.FleetStage.Applications = st.Applications

	if in.Recovery != nil {
		rec := *in.Recovery
		rec.Freight = freightName(rec.Freight.Name, in.Aliases)
		r.Recovery = &rec
	}

	rollouts := slices.Clone(in.Rollouts)
	shownRollback := map[string]bool{}
	for i := range rollouts {
		if rollouts[i].Spec.Direction == fleetv1alpha1.DirectionRollback {
			shownRollback[rollouts[i].Spec.RollbackOf] = true
		}
	}
	r.Rollouts = make([]Rollout, 0, len(rollouts))
	for i := range rollouts {
		ro := &rollouts[i]
		role := RoleOther
		switch {
		case ro.Name == st.CurrentRollout:
			role = RoleCurrent
		case shownRollback[ro.Name]:
			role = RoleRolledBack
		case !ro.Status.Phase.IsFinal():
			role = RoleActive
		case ro.Name == st.LastRollout:
			role = RoleLast
		}
		r.Rollouts = append(r.Rollouts, buildRollout(&fs.Spec, ro, role, in.Aliases))
	}
	slices.SortStableFunc(r.Rollouts, func(a, b Rollout) int {
		return cmp.Or(cmp.Compare(roleRank(a.Role), roleRank(b.Role)),
			b.CreatedAt.Compare(a.CreatedAt.Time), cmp.Compare(a.Name, b.Name))
	})
	return r
}

// roleRank orders roles for display.
func roleRank(role string) int {
	switch role {
	case RoleCurrent:
		return 0
	case RoleActive:
		return 1
	case RoleLast:
		return 2
	case RoleRolledBack:
		return 3
	}
	return 4
}

func buildRollout(spec *fleetv1alpha1.FleetStageSpec, ro *fleetv1alpha1.FleetRollout, role string, aliases map[string]string) Rollout {
	out := Rollout{
		Name:       ro.Name,
		Role:       role,
		Direction:  cmp.Or(ro.Spec.Direction, fleetv1alpha1.DirectionForward),
		Freight:    freightName(ro.Spec.Freight.Name, aliases),
		RollbackOf: ro.Spec.RollbackOf,
		Intent:     cmp.Or(ro.Spec.Intent, fleetv1alpha1.IntentRun),
		Actor:      fleetrollout.ActorOf(ro),
		Phase:      cmp.Or(ro.Status.Phase, fleetv1alpha1.RolloutPending),
		Message:    ro.Status.Message,
		CreatedAt:  ro.CreationTimestamp,
		StartedAt:  ro.Status.StartedAt,
		FinishedAt: ro.Status.FinishedAt,
		Waves:      slices.Clone(ro.Status.Waves),
		Failures:   slices.Clone(ro.Status.Failures),
		Analyses:   buildAnalyses(spec, ro.Status.Waves),
	}
	if out.Waves == nil {
		out.Waves = []fleetv1alpha1.WaveProgress{}
	}
	for _, w := range ro.Status.Waves {
		out.Totals.Total += w.Total
		out.Totals.Succeeded += w.Succeeded
		out.Totals.Failed += w.Failed
		out.Totals.InFlight += w.InFlight
		out.Totals.Pending += w.Pending
	}
	return out
}

func freightName(name string, aliases map[string]string) FreightName {
	return FreightName{Name: name, Alias: aliases[name]}
}

// Relevant keeps the rollouts an operator needs to see: the current
// and last ones, every unfinished one, and the rollouts those roll back.
func Relevant(fs *fleetv1alpha1.FleetStage, all []fleetv1alpha1.FleetRollout) []fleetv1alpha1.FleetRollout {
	keep := map[string]bool{fs.Status.CurrentRollout: true, fs.Status.LastRollout: true}
	for i := range all {
		if !all[i].Status.Phase.IsFinal() {
			keep[all[i].Name] = true
		}
	}
	for i := range all {
		if keep[all[i].Name] && all[i].Spec.RollbackOf != "" {
			keep[all[i].Spec.RollbackOf] = true
		}
	}
	out := make([]fleetv1alpha1.FleetRollout, 0, len(keep))
	for i := range all {
		if keep[all[i].Name] {
			out = append(out, all[i])
		}
	}
	return out
}
