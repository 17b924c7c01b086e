package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// WavePromotionKey prefixes the key of a wave Stage Promotion ("wave:<wave>")
// among the target IDs that key target Promotions, in expectations and in a
// rollout's status.dispatch claims.
const WavePromotionKey = "wave:"

// WaveKey returns the key of the wave Stage Promotion of wave.
func WaveKey(wave string) string { return WavePromotionKey + wave }

// Snapshot is what the reconciler read for one rollout: the objects as the
// cache shows them, and the controller's in-memory records of what it did
// that the cache may not show yet. Observe reads it and never modifies it.
type Snapshot struct {
	// Rollout is the FleetRollout.
	Rollout *fleetv1alpha1.FleetRollout
	// FleetStage is the rollout's FleetStage.
	FleetStage *fleetv1alpha1.FleetStage
	// Plan is the rollout's plan snapshot.
	Plan *plan.WavePlan
	// Index is Plan prepared for scheduling under the FleetStage's policy
	// (NewIndex). The reconciler builds it once per plan snapshot and
	// policy, not per reconcile; nil makes Observe build it.
	Index *plan.ScheduleIndex
	// Promotions are the Promotions Observe sorts: the rollout's own, those
	// of its FleetStage's wave Stages, and those of the Project still
	// running. Others may be included; Observe ignores them.
	Promotions []*kargo.Promotion
	// Stages are the FleetStage's target Stages.
	Stages []*kargo.Stage
	// Recorded are the names and UIDs of the Stages the FleetStage
	// generated (its Stage record); nil when it recorded none. A target
	// Stage not recorded is no target's: labels and owner references can
	// be written by anyone who may create Stages.
	Recorded map[string]types.UID
	// Freight is the rollout's Freight; nil when it was not found or not
	// read (a rollback needs no approvals, nor a rollout whose approvals
	// are all known: NeedsApprovals).
	Freight *kargo.Freight
	// Approved are the waves an earlier read of the Freight found approved.
	Approved map[string]bool
	// Refused records, by target ID, when Kargo first refused to create the
	// target's Promotion and why.
	Refused map[string]Refusal
	// TakenSince records, by target ID, since when the controller has seen
	// the target's Stage name held by a Stage the FleetStage did not record
	// (StageUnrecorded): the target fails when that lasts a whole progress
	// deadline, so one taken name never holds its wave for ever.
	TakenSince map[string]time.Time
	// Expected are the keys (target IDs, WaveKey of a wave) of Promotions
	// the controller created a moment ago, whose expectation has not
	// expired.
	Expected map[string]bool
	// Blocked are the members the FreightPolicies of the Project keep off
	// the rollout's Freight, by target ID (policy.Checker's verdicts).
	Blocked map[string]policy.Verdict
}

// Refusal is Kargo's first refusal of a target's Promotion.
type Refusal struct {
	// Since is when Kargo first refused.
	Since time.Time
	// Message is Kargo's message.
	Message string
}

// Observed is an Observation plus what applying a decision needs.
type Observed struct {
	Observation
	// WaveRequests maps a wave to the Promotion of its wave Stage that asked
	// for it.
	WaveRequests map[string]string
	// Mine are the rollout's newest target Promotions by target ID.
	Mine map[string]*kargo.Promotion
	// Seen are the Expected keys whose Promotion the snapshot shows: their
	// expectation is met.
	Seen []string
	// Aborted are the rollout's Promotions someone asked Kargo to abort:
	// the wave Stage Promotions that requested a wave and its own target
	// Promotions, in the Promotions' order (AbortGestures reads them).
	Aborted []AbortedPromotion
	// recovered are the errored wave Stage Promotions a recovery exists for.
	recovered map[string]bool
}

// Observe interprets Kargo's objects for one rollout: which target
// Promotions are the rollout's, where each target Stage stands, which
// waves were asked for, promoted, given up on or approved. It is pure: the
// reconciler lists the objects (from its cache, without copying them) and
// passes them in; Observe only reads them.
//
// The quirks of real Kargo it copes with:
//   - Kargo renames every Promotion (<stage>.<ulid>.<freight>), so the
//     rollout's Promotions are found by kargo-fleet's labels; of several
//     for one target, the newest counts (creation time, then the name,
//     whose ULID orders Promotions created within one second).
//   - A Promotion can be Succeeded before its Stage shows the Freight; the
//     target counts as on the Freight only once the Stage's freight history
//     says so, and a verification counts only for the rollout's Freight.
//   - A wave Stage Promotion of the rollout's Freight that ended without
//     succeeding (Errored, Failed, Aborted) means Kargo will never mark the
//     Freight verified there; one still alive, or one just created, makes
//     the wave promoted again. Rollback records on wave Stages and
//     Promotions older than the rollout are not the rollout's.
//   - A Promotion created a moment ago may not be listed yet: Expected keys
//     count as in flight until the snapshot shows them.
//
// Observe interprets every target afresh; a Tracker gives the same
// observation and re-interprets only the targets whose objects changed.
func Observe(s Snapshot, now time.Time) (*Observed, error) {
	return observeWith(s, now, nil)
}

// observeWith is Observe; with a Tracker, the targets are interpreted by it.
func observeWith(s Snapshot, now time.Time, tr *Tracker) (*Observed, error) {
	ro, fs := s.Rollout, s.FleetStage
	idx := s.Index
	if idx == nil {
		var err error
		if idx, err = NewIndex(ro, fs, s.Plan); err != nil {
			return nil, err
		}
	}
	o := &Observed{
		Observation: Observation{
			Now:            now,
			Rollout:        ro,
			FleetStage:     fs.Name,
			Plan:           s.Plan,
			Index:          idx,
			OnHalt:         fs.Spec.Policy.OnHalt,
			RequestedWaves: map[string]bool{},
			ApprovedWaves:  map[string]bool{},
			ApprovedAt:     map[string]time.Time{},
			RequestPhases:  map[string]kargo.PromotionPhase{},
			WavePromoted:   map[string]bool{},
			WaveGaveUp:     map[string]kargo.PromotionPhase{},
			WaveErrored:    map[string]ErroredWavePromotion{},
		},
		WaveRequests: fleetrollout.WaveRequests(ro),
	}
	if tr != nil {
		o.Mine = tr.mineMap(len(s.Promotions))
	} else {
		o.Mine = make(map[string]*kargo.Promotion, len(s.Promotions))
	}
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && fs.Spec.Policy.Rollback.MaxConcurrent != nil {
		o.RollbackMaxConcurrent = ResolvePercent(fs.Spec.Policy.Rollback.MaxConcurrent, s.Plan.Members())
	}
	for wave := range o.WaveRequests {
		o.RequestedWaves[wave] = true
	}
	busy := o.observePromotions(s)
	if tr != nil {
		tr.observeTargets(o, s, busy)
	} else {
		o.observeTargets(s, busy)
	}
	o.observeExpected(s.Expected)
	o.observeApprovals(s)
	return o, nil
}

// NewIndex prepares a rollout's plan snapshot for scheduling under its
// FleetStage's policy. The index depends only on the plan, the policy and
// the rollout's direction: build it once per plan snapshot and FleetStage
// generation.
func NewIndex(ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage, p *plan.WavePlan) (*plan.ScheduleIndex, error) {
	compiled, err := compilePolicy(ro, fs)
	if err != nil {
		return nil, err
	}
	return plan.NewScheduleIndex(p, compiled), nil
}

// NeedsApprovals reports whether the next decision about the rollout can
// depend on a Freight approval not yet known. Decide asks about the
// approval of the wave the rollout is at only (before the wave starts), so
// only that wave counts, and the next one once every target of the current
// wave has started (it may finish before the next decision): as the
// rollout's status last recorded them; and the wave whose analysis asks
// for approval. approved are the waves an earlier
// read found approved (Kargo never takes an approval back). Otherwise the
// Freight, which holds one entry per Stage of the Project, need not be
// read: a fleet whose last wave waits for approval does not read it on
// every reconcile of its long general wave.
func NeedsApprovals(ro *fleetv1alpha1.FleetRollout, p *plan.WavePlan, approved map[string]bool) bool {
	if ro.Spec.Direction != fleetv1alpha1.DirectionForward || ro.Status.Phase.IsFinal() {
		return false
	}
	progress := make(map[string]*fleetv1alpha1.WaveProgress, len(ro.Status.Waves))
	for i := range ro.Status.Waves {
		progress[ro.Status.Waves[i].Name] = &ro.Status.Waves[i]
	}
	for i := range p.Waves {
		w := &p.Waves[i]
		wp := progress[w.Name]
		if wp != nil && (wp.Phase == fleetv1alpha1.WaveSucceeded || wp.Phase == fleetv1alpha1.WaveFailed) {
			continue
		}
		if wp != nil && wp.Analysis != nil && wp.Analysis.Phase == fleetv1alpha1.AnalysisAskApproval {
			// The wave's analysis asks for approval: only one given after
			// the analysis started counts, so its time must be read, even
			// when an earlier read found the Freight approved.
			return true
		}
		if w.Approval == fleetv1alpha1.ApprovalRequired && !approved[w.Name] {
			return true
		}
		if wp == nil || wp.Pending > 0 || i+1 == len(p.Waves) {
			return false
		}
		next := &p.Waves[i+1]
		return next.Approval == fleetv1alpha1.ApprovalRequired && !approved[next.Name]
	}
	return false
}

// compilePolicy compiles the FleetStage's policy for the rollout. A
// rollback is the way out of trouble: change windows do not hold it back
// (constraints still do, to bound the blast radius of the return).
func compilePolicy(ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) (*plan.CompiledPolicy, error) {
	policy := &fs.Spec.Policy
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && len(policy.Windows) > 0 {
		policy = policy.DeepCopy()
		policy.Windows = nil
	}
	compiled, errs := plan.CompilePolicy(policy, field.NewPath("spec", "policy"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("error compiling the policy of FleetStage %q: %w", fs.Name, errs.ToAggregate())
	}
	// Per-shard limits bound a rollback too: it lands on the same Kargo
	// controllers.
	limits, errs := plan.CompileShardLimits(fs.Spec.Shards, field.NewPath("spec", "shards"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("error compiling the shard limits of FleetStage %q: %w", fs.Name, errs.ToAggregate())
	}
	return compiled.WithShardLimits(limits), nil
}

// observePromotions sorts the Project's Promotions into the rollout's wave
// Stage Promotions, its target Promotions, and the others that keep a
// target Stage busy. It returns the busy Stages.
func (o *Observed) observePromotions(s Snapshot) map[string]bool {
	ro, fs := s.Rollout, s.FleetStage
	waveOfStage := make(map[string]string, len(s.Plan.Waves))
	for _, w := range s.Plan.Waves {
		waveOfStage[render.WaveStageName(fs.Name, w.Name)] = w.Name
	}
	requestedBy := make(map[string]string, len(o.WaveRequests))
	for wave, promotion := range o.WaveRequests {
		requestedBy[promotion] = wave
	}
	busy := map[string]bool{}
	alive := map[string]bool{}
	waves := newWavePromotions()
	for _, p := range s.Promotions {
		if wave, ok := waveOfStage[p.Spec.Stage]; ok {
			o.observeWavePromotion(ro, wave, p, alive)
			w, requested := requestedBy[p.Name]
			if requested {
				o.RequestPhases[w] = p.Status.Phase
				o.noteAbort(p, GestureAbortWavePromotion, w == wave)
			}
			waves.add(ro, wave, p, requested && w == wave)
		}
		switch {
		case p.Labels[fleetv1alpha1.RolloutLabel] == ro.Name:
			o.observeMine(p)
			o.noteAbort(p, GestureAbortTargetPromotion, true)
		case !p.Status.Phase.IsTerminal():
			busy[p.Spec.Stage] = true
			if p.Labels[fleetv1alpha1.FleetStageLabel] == fs.Name && p.Labels[fleetv1alpha1.TargetLabel] != "" {
				o.OtherInFlight = append(o.OtherInFlight, plan.InFlightTarget{
					Target:  memberOrID(o.Index, p.Labels[fleetv1alpha1.TargetLabel]),
					Rollout: p.Labels[fleetv1alpha1.RolloutLabel],
				})
			}
		}
	}
	for wave := range alive {
		delete(o.WaveGaveUp, wave)
	}
	o.WaveErrored = waves.errored()
	o.recovered = waves.recovered
	return busy
}

// observeWavePromotion records a Promotion of a wave Stage: one of the
// Freight made for this rollout (not one from before it, nor one recording
// a rollback on the wave Stage) promotes the wave; it gave up when it ended
// without succeeding, unless another is alive.
func (o *Observed) observeWavePromotion(ro *fleetv1alpha1.FleetRollout, wave string, p *kargo.Promotion, alive map[string]bool) {
	if p.Spec.Freight != ro.Spec.Freight.Name || p.Annotations[kargo.RollbackAnnotation] == "true" ||
		p.CreationTimestamp.Before(&ro.CreationTimestamp) {
		return
	}
	o.WavePromoted[wave] = true
	if ph := p.Status.Phase; ph.IsTerminal() && ph != kargo.PromotionSucceeded {
		o.WaveGaveUp[wave] = ph
	} else {
		alive[wave] = true
	}
}

// observeMine keeps the newest of the rollout's Promotions per target.
// Kargo names Promotions "<stage>.<ULID>.<freight>": within a second, the
// name orders a target's Promotions.
func (o *Observed) observeMine(p *kargo.Promotion) {
	id := p.Labels[fleetv1alpha1.TargetLabel]
	if cur := o.Mine[id]; cur == nil || p.NewerThan(cur) {
		o.Mine[id] = p
	}
}

// observeTargets records what each member's Stage and newest Promotion show.
func (o *Observed) observeTargets(s Snapshot, busy map[string]bool) {
	o.Targets = make(map[string]TargetObservation, s.Plan.Members())
	byName := make(map[string]*kargo.Stage, len(s.Stages))
	for _, st := range s.Stages {
		byName[st.Name] = st
	}
	for _, w := range s.Plan.Waves {
		for _, t := range w.Members {
			name := render.TargetStageName(s.FleetStage.Name, t.ID)
			o.Targets[t.ID] = o.observeTarget(s, t.ID, name, byName[name], busy[name])
		}
	}
}

// observeTarget interprets one member from its Stage (st, under the
// target's Stage name; nil when there is none) and its newest Promotion of
// the rollout, which it drops from Mine when the Promotion was made for an
// earlier Stage of that name.
func (o *Observed) observeTarget(s Snapshot, id, name string, st *kargo.Stage, busy bool) TargetObservation {
	unrecorded := false
	if rec := s.Recorded[name]; st != nil && (st.Labels[fleetv1alpha1.TargetLabel] != id || rec == "" || rec != st.UID) {
		// A Stage under the target's name that the FleetStage did
		// not record: not the target's, and never promoted.
		st, unrecorded = nil, true
	}
	obs := observeStage(st, s.Rollout.Spec.Freight.Name, busy)
	if unrecorded {
		obs.StageGone, obs.StageUnrecorded = false, true
		obs.StageName, obs.TakenSince = name, s.TakenSince[id]
	}
	p := o.Mine[id]
	if p != nil && st != nil && !obs.OnFreight && p.Status.Phase == kargo.PromotionSucceeded && PromotedEarlierStage(p, st) {
		// The Stage was deleted and re-created after the Promotion
		// succeeded: the new Stage runs nothing, and no Promotion of
		// the rollout was made for it. It is pending again; the
		// Promotion created for it carries its UID, so it is
		// promoted once.
		obs.Recreated = p.Name
		delete(o.Mine, id)
		p = nil
	}
	if f, ok := s.Refused[id]; ok && p == nil {
		obs.RefusedSince, obs.RefusedMessage = f.Since, f.Message
	}
	if p != nil {
		obs.Promotion = observePromotion(p)
	}
	if v, ok := s.Blocked[id]; ok && !v.Allowed() {
		obs.Blocked = &v
	}
	return obs
}

// PromotedEarlierStage reports whether Promotion p was created for an
// earlier Stage of st's name, one deleted since: the Stage UID kargo-fleet
// recorded on p, else the Stage that Kargo made p's owner, differs from
// st's UID. A Promotion that shows neither counts as the Stage's own (the
// dispatcher's check, which sees no Stage, decides the same way), so it is
// never promoted twice.
func PromotedEarlierStage(p *kargo.Promotion, st *kargo.Stage) bool {
	uid := PromotionStageUID(p)
	return uid != "" && st.UID != "" && uid != st.UID
}

// PromotionStageUID returns the UID of the Stage a Promotion was created
// for: the one kargo-fleet recorded (StageUIDAnnotation), else the UID of
// the Stage Kargo made its owner; "" when it shows neither.
func PromotionStageUID(p metav1.Object) types.UID {
	if uid := p.GetAnnotations()[fleetv1alpha1.StageUIDAnnotation]; uid != "" {
		return types.UID(uid)
	}
	for _, ref := range p.GetOwnerReferences() {
		if ref.Kind == "Stage" && strings.HasPrefix(ref.APIVersion, kargo.GroupVersion.Group+"/") {
			return ref.UID
		}
	}
	return ""
}

// observeStage reads a target Stage: gone (or being pruned), busy, its
// health, whether it runs freight and, when it does, its newest
// verification.
func observeStage(st *kargo.Stage, freight string, busy bool) TargetObservation {
	obs := TargetObservation{}
	if st == nil || st.Annotations[fleetv1alpha1.PruneAnnotation] != "" {
		obs.StageGone = true
	}
	if st == nil {
		return obs
	}
	obs.StageBusy = busy
	obs.StageUID = st.UID
	if st.Status.Health != nil {
		obs.Health = st.Status.Health.Status
	}
	obs.OnFreight = st.RunsFreight(freight)
	if v := st.LastVerification(); v != nil && obs.OnFreight {
		obs.Verification = v.Phase
	}
	return obs
}

func observePromotion(p *kargo.Promotion) *PromotionObservation {
	obs := &PromotionObservation{
		Name: p.Name, Phase: p.Status.Phase, Message: p.Status.Message,
		CreatedAt: p.CreationTimestamp.Time, AbortRequested: p.Annotations[kargo.AbortAnnotation] != "",
	}
	if p.Status.FinishedAt != nil {
		obs.FinishedAt = p.Status.FinishedAt.Time
	}
	return obs
}

// observeExpected splits the expected keys into those the snapshot shows
// (Seen) and those still expected; a wave Stage Promotion created a moment
// ago promotes its wave although the cache does not show it yet.
func (o *Observed) observeExpected(expected map[string]bool) {
	o.Expected = make(map[string]bool, len(expected))
	for key := range expected {
		if wave, errored, ok := ParseWaveRecoveryKey(key); ok {
			if o.recovered[errored] {
				o.Seen = append(o.Seen, key)
				continue
			}
			// Created a moment ago: the wave is alive again.
			delete(o.WaveErrored, wave)
			delete(o.WaveGaveUp, wave)
			o.Expected[key] = true
			continue
		}
		wave, isWave := strings.CutPrefix(key, WavePromotionKey)
		if isWave && o.WavePromoted[wave] || !isWave && o.Mine[key] != nil {
			o.Seen = append(o.Seen, key)
			continue
		}
		o.Expected[key] = true
	}
	for key := range o.Expected {
		if wave, ok := strings.CutPrefix(key, WavePromotionKey); ok {
			o.WavePromoted[wave] = true
			delete(o.WaveGaveUp, wave)
		}
	}
}

// observeApprovals records the waves whose wave Stage the forward rollout's
// Freight is approved for.
func (o *Observed) observeApprovals(s Snapshot) {
	if s.Rollout.Spec.Direction != fleetv1alpha1.DirectionForward {
		return
	}
	for _, w := range s.FleetStage.Spec.Waves {
		if w.Approvals == nil {
			continue
		}
		if o.Quorums == nil {
			o.Quorums = map[string]Quorum{}
		}
		o.Quorums[w.Name] = JudgeQuorum(w.Approvals, s.Rollout.Spec.Actor, ApprovalsOf(s.Rollout, w.Name))
	}
	for _, w := range s.Plan.Waves {
		stage := render.WaveStageName(s.FleetStage.Name, w.Name)
		if s.Approved[w.Name] || s.Freight != nil && s.Freight.IsApprovedFor(stage) {
			o.ApprovedWaves[w.Name] = true
		}
		if s.Freight != nil {
			if a, ok := s.Freight.Status.ApprovedFor[stage]; ok && a.ApprovedAt != nil {
				o.ApprovedAt[w.Name] = a.ApprovedAt.Time
			}
		}
	}
}

// memberOrID returns the plan's member with that ID (its labels count
// against constraints), or a target known only by ID.
func memberOrID(idx *plan.ScheduleIndex, id string) plan.Target {
	if t, ok := idx.Member(id); ok {
		return *t
	}
	return plan.Target{ID: id}
}

// ResolvePercent resolves a count or percentage against total, rounding a
// percentage up and never going below 1.
func ResolvePercent(v *intstr.IntOrString, total int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
