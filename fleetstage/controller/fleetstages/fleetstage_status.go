package fleetstages

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

const (
	// maxSamples bounds the excluded/unassigned examples in status.
	maxSamples = 10
	// maxMessage bounds condition messages.
	maxMessage = 1024
	// maxSampleName and maxSampleReason are the CRD's bounds of a
	// TargetSample: inventory names (an Argo CD cluster's, for one) have none.
	maxSampleName   = 253
	maxSampleReason = 256
)

// targetSample lists a target in status, within the CRD's bounds.
func targetSample(name, reason string) fleetv1alpha1.TargetSample {
	return fleetv1alpha1.TargetSample{Name: strutil.Ellipsis(name, maxSampleName), Reason: strutil.Ellipsis(reason, maxSampleReason)}
}

// setTargetsResolved records target counts, wave membership and samples of
// excluded and unassigned targets: counts and capped lists only, so the
// status stays small whatever the fleet's size.
func setTargetsResolved(fs *fleetv1alpha1.FleetStage, p *plan.WavePlan) {
	tc := fleetv1alpha1.TargetCounts{
		Candidates: int32(p.Candidates),
		Selected:   int32(p.Selected()),
		Excluded:   int32(len(p.Excluded)),
		Unassigned: int32(len(p.Unassigned)),
	}
	byReason := map[string]int32{}
	for _, e := range p.Excluded {
		byReason[string(e.Reason)]++
		if len(tc.Samples) < maxSamples {
			tc.Samples = append(tc.Samples, targetSample(e.Target.Name, e.Message))
		}
	}
	for _, t := range p.Unassigned {
		if len(tc.Samples) < maxSamples {
			tc.Samples = append(tc.Samples, targetSample(t.Name, "Unassigned: no wave matches it"))
		}
	}
	for reason, n := range byReason {
		tc.ExcludedByReason = append(tc.ExcludedByReason, fleetv1alpha1.ReasonCount{Reason: reason, Count: n})
	}
	slices.SortFunc(tc.ExcludedByReason, func(a, b fleetv1alpha1.ReasonCount) int { return cmp.Compare(a.Reason, b.Reason) })
	fs.Status.Targets = tc
	fs.Status.Shards = shardCounts(fs, p)
	fs.Status.WaveCount = int32(len(p.Waves))
	// A wave Stage's recorded UID stays until recordStages says otherwise:
	// a reconcile that fails before it must not forget it.
	uids := make(map[string]string, len(fs.Status.Waves))
	for _, w := range fs.Status.Waves {
		uids[w.Stage] = w.StageUID
	}
	fs.Status.Waves = make([]fleetv1alpha1.WaveMembership, 0, len(p.Waves))
	for _, w := range p.Waves {
		stage := render.WaveStageName(fs.Name, w.Name)
		fs.Status.Waves = append(fs.Status.Waves, fleetv1alpha1.WaveMembership{
			Name: w.Name, Stage: stage, Members: int32(len(w.Members)), StageUID: uids[stage],
		})
	}

	cond := metav1.Condition{Type: fleetv1alpha1.TargetsResolvedCondition, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReconciledReason, ObservedGeneration: fs.Generation}
	cond.Message = fmt.Sprintf("%d of %d candidate target(s) selected into %d wave(s); %d excluded, %d unassigned",
		tc.Selected, tc.Candidates, len(p.Waves), tc.Excluded, tc.Unassigned)
	if len(p.EvaluationErrors) > 0 {
		e := p.EvaluationErrors[0]
		cond.Message += fmt.Sprintf("; %d expression error(s), first: %s on target %s: %s", len(p.EvaluationErrors), e.Field, e.TargetID, e.Message)
	}
	cond.Message = truncate(cond.Message)
	meta.SetStatusCondition(&fs.Status.Conditions, cond)
}

// setVersions records in the status how many target Stages currently run
// which Freight.
func setVersions(fs *fleetv1alpha1.FleetStage, targets []kargo.Stage) {
	fs.Status.Versions = fleetstatus.CountVersions(targets)
}

// setReady summarises the other conditions into Ready: False with the reason
// of the first False one, else Unknown while one has not been evaluated, else
// True.
func setReady(fs *fleetv1alpha1.FleetStage) {
	ready := metav1.Condition{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReconciledReason, Message: "Targets resolved and Stages in step", ObservedGeneration: fs.Generation}
	var pending string
	for _, t := range []string{fleetv1alpha1.TargetsResolvedCondition, fleetv1alpha1.StagesSyncedCondition} {
		c := meta.FindStatusCondition(fs.Status.Conditions, t)
		switch {
		case c == nil:
			if pending == "" {
				pending = t
			}
		case c.Status != metav1.ConditionTrue:
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, truncate(t+": "+c.Message)
			meta.SetStatusCondition(&fs.Status.Conditions, ready)
			return
		}
	}
	if pending != "" {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "Pending", pending+" has not been evaluated yet"
	}
	meta.SetStatusCondition(&fs.Status.Conditions, ready)
}

// statusEqual compares two statuses, ignoring condition transition times
// (which SetStatusCondition keeps when the status does not change).
func statusEqual(a, b *fleetv1alpha1.FleetStageStatus) bool {
	return reflect.DeepEqual(a, b)
}

func truncate(s string) string { return strutil.Ellipsis(s, maxMessage) }

// sample lists up to n names, then how many more there are.
func sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// maxShardCounts bounds status.shards (its MaxItems).
const maxShardCounts = 64

// shardCounts counts the plan's members per shard, most first, then by
// name; nil when the FleetStage does not manage shards.
func shardCounts(fs *fleetv1alpha1.FleetStage, p *plan.WavePlan) []fleetv1alpha1.ShardCount {
	if fs.Spec.Shards == nil {
		return nil
	}
	byShard := map[string]int32{}
	for i := range p.Waves {
		for j := range p.Waves[i].Members {
			byShard[p.Waves[i].Members[j].Shard]++
		}
	}
	out := make([]fleetv1alpha1.ShardCount, 0, len(byShard))
	for shard, n := range byShard {
		out = append(out, fleetv1alpha1.ShardCount{Shard: shard, Targets: n})
	}
	slices.SortFunc(out, func(a, b fleetv1alpha1.ShardCount) int {
		return cmp.Or(cmp.Compare(b.Targets, a.Targets), cmp.Compare(a.Shard, b.Shard))
	})
	if len(out) > maxShardCounts {
		out = out[:maxShardCounts]
	}
	return out
}
