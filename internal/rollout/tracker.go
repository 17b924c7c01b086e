package rollout

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// Tracker keeps one rollout's interpretation of its targets between
// decisions, so a decision after an event re-interprets only the targets
// whose objects changed. The informer cache hands out the same object until
// it changes, and a changed object is a new one: a target whose Stage and
// newest Promotion are the objects seen last time (same pointer and
// resourceVersion), with the same record, busy Stage, refusal and taken
// name, keeps its interpretation. A target a FreightPolicy blocks is
// interpreted afresh each time (verdicts are rebuilt per reconcile).
//
// Nothing in a Tracker is a source of truth: it only remembers what the
// last Observe derived from objects the next one is handed again, so a
// fresh Tracker (after a restart) observes exactly what a warm one does.
// It is not safe for concurrent use; the reconciler keeps one per rollout,
// and a rollout is reconciled by one worker at a time.
type Tracker struct {
	key trackerKey
	// members are the plan's members, in plan order, with what their
	// interpretation was derived from.
	members []trackedTarget
	// nameSlot maps a target Stage name to its slot in stages and names.
	nameSlot map[string]int
	names    []string
	// stages is per-Observe scratch: the snapshot's Stage under each name.
	stages []*kargo.Stage
	// targets is the observation of every member, by target ID; Observe
	// hands it out as Observation.Targets and updates only what changed.
	targets map[string]TargetObservation
	// mine is handed out as Observed.Mine, emptied for each Observe: a
	// fleet's worth of Promotions need not be re-allocated per decision.
	mine map[string]*kargo.Promotion
}

// trackerKey is what every target's interpretation depends on besides its
// own objects: when any of it changes, every target is interpreted afresh.
type trackerKey struct {
	plan       *plan.WavePlan
	rollout    types.UID
	freight    string
	fleetStage types.UID
	fsName     string
	generation int64
}

// trackedTarget is one member and the inputs of its interpretation.
type trackedTarget struct {
	id       string
	nameSlot int
	valid    bool
	// recreated says the target's newest Promotion was made for an
	// earlier Stage of its name (TargetObservation.Recreated).
	recreated bool
	inputs    targetInputs
}

// targetInputs are what one member's interpretation is derived from.
type targetInputs struct {
	stage    *kargo.Stage
	stageRV  string
	recorded types.UID
	busy     bool
	mine     *kargo.Promotion
	mineRV   string
	refused  Refusal
	taken    time.Time
	// blocked says a FreightPolicy verdict was given: such a target is
	// interpreted afresh, and once more when the verdict is gone.
	blocked bool
}

// NewTracker returns an empty Tracker: its first Observe interprets every
// target.
func NewTracker() *Tracker { return &Tracker{} }

// Observe is Observe of the package, re-interpreting only the targets whose
// objects or records changed since the Tracker's last Observe. The
// Observation's Targets map belongs to the Tracker: it is valid until the
// next Observe and must not be modified.
func (tr *Tracker) Observe(s Snapshot, now time.Time) (*Observed, error) {
	return observeWith(s, now, tr)
}

// reset prepares the Tracker for a plan, FleetStage and rollout it has not
// seen: every target will be interpreted afresh.
func (tr *Tracker) reset(s Snapshot, key trackerKey) {
	tr.key = key
	n := s.Plan.Members()
	tr.members = make([]trackedTarget, 0, n)
	tr.nameSlot = make(map[string]int, n)
	tr.names = make([]string, 0, n)
	tr.targets = make(map[string]TargetObservation, n)
	for _, w := range s.Plan.Waves {
		for _, t := range w.Members {
			name := render.TargetStageName(s.FleetStage.Name, t.ID)
			slot, ok := tr.nameSlot[name]
			if !ok {
				slot = len(tr.names)
				tr.nameSlot[name] = slot
				tr.names = append(tr.names, name)
			}
			tr.members = append(tr.members, trackedTarget{id: t.ID, nameSlot: slot})
		}
	}
	tr.stages = make([]*kargo.Stage, len(tr.nameSlot))
}

// observeTargets records in o what each member's Stage and newest
// Promotion show, re-interpreting only the members whose inputs changed.
func (tr *Tracker) observeTargets(o *Observed, s Snapshot, busy map[string]bool) {
	key := trackerKey{plan: s.Plan, rollout: s.Rollout.UID, freight: s.Rollout.Spec.Freight.Name,
		fleetStage: s.FleetStage.UID, fsName: s.FleetStage.Name, generation: s.FleetStage.Generation}
	if key != tr.key || tr.members == nil {
		tr.reset(s, key)
	}
	clear(tr.stages)
	for _, st := range s.Stages {
		if slot, ok := tr.nameSlot[st.Name]; ok {
			tr.stages[slot] = st
		}
	}
	for i := range tr.members {
		m := &tr.members[i]
		name := tr.names[m.nameSlot]
		in := targetInputs{stage: tr.stages[m.nameSlot], recorded: s.Recorded[name], busy: busy[name],
			mine: o.Mine[m.id], refused: s.Refused[m.id], taken: s.TakenSince[m.id]}
		if in.stage != nil {
			in.stageRV = in.stage.ResourceVersion
		}
		if in.mine != nil {
			in.mineRV = in.mine.ResourceVersion
		}
		_, in.blocked = s.Blocked[m.id]
		if m.valid && !in.blocked && in == m.inputs {
			if m.recreated {
				// The same Promotion, made for an earlier Stage: not the
				// target's newest, as when it was interpreted.
				delete(o.Mine, m.id)
			}
			continue
		}
		obs := o.observeTarget(s, m.id, name, in.stage, in.busy)
		tr.targets[m.id] = obs
		m.inputs, m.valid, m.recreated = in, true, obs.Recreated != ""
	}
	o.Targets = tr.targets
}

// mineMap returns the Tracker's map of the rollout's newest Promotions,
// emptied; the Observed of its previous Observe no longer holds them.
func (tr *Tracker) mineMap(size int) map[string]*kargo.Promotion {
	if tr.mine == nil {
		tr.mine = make(map[string]*kargo.Promotion, size)
	}
	clear(tr.mine)
	return tr.mine
}
