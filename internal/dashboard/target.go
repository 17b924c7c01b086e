package dashboard

import (
	"cmp"
	"slices"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// TargetDetail is what the page shows when a target is clicked.
type TargetDetail struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Wave     string            `json:"wave"`
	Stage    string            `json:"stage"`
	Source   string            `json:"source,omitempty"`
	Labels   map[string]string `json:"labels"`
	Params   map[string]string `json:"params"`
	State    string            `json:"state"`
	Reason   string            `json:"reason,omitempty"`
	Message  string            `json:"message,omitempty"`
	Current  string            `json:"current,omitempty"`
	Previous string            `json:"previous,omitempty"`
	Health   string            `json:"health,omitempty"`
	// LastPromotion is the target's newest Promotion of any rollout.
	LastPromotion *PromotionDetail `json:"lastPromotion,omitempty"`
	// KargoURL links to the target Stage in Kargo's UI, when configured.
	KargoURL string `json:"kargoURL,omitempty"`
	// Drifted is set when the target runs Freight the fleet does not
	// intend and no open rollout explains (drift.Detect).
	Drifted bool `json:"drifted"`
	// BreakGlass is the break-glass Promotion that pushed the Freight the
	// target runs: intended, not drift.
	BreakGlass *BreakGlassDetail `json:"breakGlass,omitempty"`
	// Application is what the target's Argo CD Application shows that the
	// fleet did not do, when the FleetStage's status names it
	// (status.applications, ten examples).
	Application *fleetv1alpha1.ApplicationDrift `json:"application,omitempty"`
}

// BreakGlassDetail describes a break-glass Promotion: who pushed the
// target and why.
type BreakGlassDetail struct {
	Promotion string `json:"promotion"`
	Freight   string `json:"freight"`
	Actor     string `json:"actor,omitempty"`
	Reason    string `json:"reason"`
	Created   string `json:"created"`
}

// PromotionDetail describes one Promotion.
type PromotionDetail struct {
	Name    string `json:"name"`
	Freight string `json:"freight"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	Rollout string `json:"rollout,omitempty"`
	Created string `json:"created"`
}

// BuildTarget builds the details of the target with the given ID, and
// false when the fleet has no such target Stage.
func BuildTarget(in FleetInput, id string) (TargetDetail, bool) {
	st := targetStage(in.Stages, id)
	if st == nil {
		return TargetDetail{}, false
	}
	fs := in.FleetStage
	d := TargetDetail{ID: id, Name: cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], id),
		Wave: st.Labels[fleetv1alpha1.WaveLabel], Stage: st.Name, Labels: map[string]string{}, Params: map[string]string{},
		State: string(rollout.TargetPending), KargoURL: link.KargoStageURL(in.KargoURL, fs.Namespace, st.Name),
		Drifted: drift.DriftedStages(fs, in.Rollouts, []kargo.Stage{*st}, breakGlassIntent(in))[st.Name]}
	d.Application = applicationOf(fs, st.Name)
	member, wave, limits := planMember(in.Plan, id)
	if member != nil {
		d.Wave = wave
	}
	if l, ok := in.Labels[id]; ok {
		d.Labels = l
	}
	if member != nil {
		d.Source, d.Params = member.Source, member.Params
		if _, ok := in.Labels[id]; !ok {
			d.Labels = member.Labels
		}
	} else {
		for _, v := range st.Spec.Vars {
			d.Params[v.Name] = v.Value
		}
	}
	name := func(n string) string { return report.DisplayFreight(report.FreightName{Name: n, Alias: in.Aliases[n]}) }
	if len(st.Status.FreightHistory) > 0 {
		d.Current = name(firstFreight(st.Status.FreightHistory[0]))
	}
	if len(st.Status.FreightHistory) > 1 {
		d.Previous = name(firstFreight(st.Status.FreightHistory[1]))
	}
	if st.Status.Health != nil {
		d.Health = st.Status.Health.Status
	}
	shown := ShownRollout(fs, in.Rollouts)
	if member != nil && shown != nil {
		j := rollout.Judge(rollout.ReadTarget(st, newestPromotions(in.Promotions, shown)[id], shown.Spec.Freight.Name),
			limits, in.Now)
		d.State, d.Reason, d.Message = string(j.State), j.Reason, j.Message
	} else {
		d.State = "NotInRollout"
	}
	last := lastPromotion(in.Promotions, st.Name)
	if glass := newestBreakGlass(in.Promotions, fs.Name, st.Name); glass != nil &&
		len(st.Status.FreightHistory) > 0 && firstFreight(st.Status.FreightHistory[0]) == glass.Spec.Freight {
		d.BreakGlass = &BreakGlassDetail{Promotion: glass.Name, Freight: name(glass.Spec.Freight),
			Actor: glass.Annotations[kargo.CreateActorAnnotation], Reason: glass.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation],
			Created: glass.CreationTimestamp.UTC().Format(time.RFC3339)}
	}
	if last != nil {
		d.LastPromotion = &PromotionDetail{Name: last.Name, Freight: name(last.Spec.Freight),
			Phase: string(cmp.Or(last.Status.Phase, kargo.PromotionPending)), Message: last.Status.Message,
			Rollout: last.Labels[fleetv1alpha1.RolloutLabel], Created: last.CreationTimestamp.UTC().Format(time.RFC3339)}
	}
	return d, true
}

// targetStage finds the target Stage of a target ID, nil when there is none.
func targetStage(stages []kargo.Stage, id string) *kargo.Stage {
	for i := range stages {
		if stages[i].Labels[fleetv1alpha1.TargetLabel] == id {
			return &stages[i]
		}
	}
	return nil
}

// applicationOf finds the Argo CD Application sample of a target Stage
// among the fleet's status examples, nil when it is not one of them.
func applicationOf(fs *fleetv1alpha1.FleetStage, stage string) *fleetv1alpha1.ApplicationDrift {
	apps := fs.Status.Applications
	if apps == nil {
		return nil
	}
	for i := range apps.Examples {
		if apps.Examples[i].Stage == stage {
			return &apps.Examples[i]
		}
	}
	return nil
}

// planMember finds a target among the plan's members, with its wave and the
// times the wave gives it; nil when the plan does not hold it. Should a
// target be listed twice, the last wave holding it wins.
func planMember(p *plan.WavePlan, id string) (member *plan.Target, wave string, limits rollout.Limits) {
	if p == nil {
		return nil, "", rollout.Limits{}
	}
	for _, w := range p.Waves {
		for mi := range w.Members {
			if w.Members[mi].ID == id {
				member, wave = &w.Members[mi], w.Name
				limits = rollout.Limits{ProgressDeadline: w.ProgressDeadline, UnhealthyGrace: w.UnhealthyGrace}
			}
		}
	}
	return member, wave, limits
}

// lastPromotion is the newest Promotion into a Stage, nil when there is none.
func lastPromotion(all []kargo.Promotion, stage string) *kargo.Promotion {
	var last *kargo.Promotion
	for i := range all {
		p := &all[i]
		if p.Spec.Stage == stage && (last == nil || p.NewerThan(last)) {
			last = p
		}
	}
	return last
}

// breakGlassIntent maps each target Stage to the Freight of its newest
// break-glass Promotion: intended, not drift (drift.Intent.BreakGlass).
func breakGlassIntent(in FleetInput) map[string]string {
	var glass []kargo.Promotion
	for i := range in.Promotions {
		if in.Promotions[i].Labels[fleetv1alpha1.BreakGlassLabel] == in.FleetStage.Name {
			glass = append(glass, in.Promotions[i])
		}
	}
	return drift.BreakGlassOf(glass)
}

// newestBreakGlass returns the newest break-glass Promotion of fleet into
// stage, nil when there is none. Newest by name, as drift.BreakGlassOf
// has it: Kargo names Promotions after their ULID.
func newestBreakGlass(all []kargo.Promotion, fleet, stage string) *kargo.Promotion {
	var newest *kargo.Promotion
	for i := range all {
		p := &all[i]
		if p.Spec.Stage == stage && p.Labels[fleetv1alpha1.BreakGlassLabel] == fleet &&
			(newest == nil || p.NewerThan(newest)) {
			newest = p
		}
	}
	return newest
}

// firstFreight is the first Freight name of a freight collection, by origin.
func firstFreight(c kargo.FreightCollection) string {
	keys := make([]string, 0, len(c.Items))
	for k := range c.Items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return ""
	}
	return c.Items[keys[0]].Name
}
