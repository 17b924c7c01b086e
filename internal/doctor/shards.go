package doctor

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// DefaultShardPickupTimeout is how long a Stage may go without a status,
// or a Promotion without a phase, before doctor says no Kargo controller
// runs its shard. Kargo reconciles a new Stage and a new Promotion within
// seconds; two minutes leaves room for a busy or restarting controller.
const DefaultShardPickupTimeout = 2 * time.Minute

// ShardState is what doctor saw of one shard's Stages and Promotions.
type ShardState struct {
	// Shard is the shard's name; "" is Kargo's default controller.
	Shard string
	// Stages counts the Stages on the shard; Reconciled those that got a
	// status from a Kargo controller; Overdue those older than the timeout
	// that got none.
	Stages, Reconciled, Overdue int
	// PickedUp counts the shard's Promotions a Kargo controller gave a
	// phase; Waiting those older than the timeout that still have none.
	PickedUp, Waiting int
	// Examples names a few overdue Stages and waiting Promotions.
	Examples []string
}

// Unreconciled reports whether the shard shows no sign of a Kargo
// controller: Promotions wait and none was ever picked up, or, without
// Promotions to tell, Stages are overdue and none has a status. A Stage
// moved to the shard keeps the status it got on its old one, so waiting
// Promotions are the stronger sign.
func (s *ShardState) Unreconciled() bool {
	if s.Waiting > 0 {
		return s.PickedUp == 0
	}
	return s.Overdue > 0 && s.Reconciled == 0 && s.PickedUp == 0
}

// Lagging reports whether some of the shard's objects are overdue while
// others were reconciled: a controller runs but is slow or was down.
func (s *ShardState) Lagging() bool {
	return s.Overdue+s.Waiting > 0 && !s.Unreconciled()
}

// hasStatus tells whether a Kargo controller ever reconciled the Stage:
// Kargo records the generation it reconciled, and anything else it writes.
func hasStatus(st *kargo.Stage) bool {
	s := &st.Status
	return s.ObservedGeneration > 0 || len(s.Conditions) > 0 || len(s.FreightHistory) > 0 ||
		s.LastHandledRefresh != "" || s.LastPromotion != nil || s.CurrentPromotion != nil
}

// ShardStates groups Stages and their Promotions by the shard Kargo's
// controllers read from the shard label, and judges each shard: a Stage
// older than timeout without a status, or a Promotion older than timeout
// without a phase, is overdue. Shards come sorted by name.
func ShardStates(stages []kargo.Stage, promotions []kargo.Promotion, now time.Time, timeout time.Duration) []ShardState {
	byShard := map[string]*ShardState{}
	state := func(shard string) *ShardState {
		s, ok := byShard[shard]
		if !ok {
			s = &ShardState{Shard: shard}
			byShard[shard] = s
		}
		return s
	}
	example := func(s *ShardState, what string) {
		if len(s.Examples) < maxExamplesInMessage {
			s.Examples = append(s.Examples, what)
		}
	}
	for i := range stages {
		st := &stages[i]
		s := state(st.Labels[kargo.ShardLabel])
		s.Stages++
		switch {
		case hasStatus(st):
			s.Reconciled++
		case now.Sub(st.CreationTimestamp.Time) > timeout:
			s.Overdue++
			example(s, "Stage "+st.Name)
		}
	}
	for i := range promotions {
		p := &promotions[i]
		s := state(p.Labels[kargo.ShardLabel])
		switch {
		case p.Status.Phase != "":
			s.PickedUp++
		case now.Sub(p.CreationTimestamp.Time) > timeout:
			s.Waiting++
			example(s, "Promotion "+p.Name)
		}
	}
	out := make([]ShardState, 0, len(byShard))
	for _, s := range byShard {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ShardState) int { return cmp.Compare(a.Shard, b.Shard) })
	return out
}

// ShardVerdict turns the shard states into doctor's verdict: fail when a
// shard shows no Kargo controller, warn when one lags, else ok.
func ShardVerdict(states []ShardState, timeout time.Duration) (Status, string, string) {
	var none, lagging, all []string
	for i := range states {
		s := &states[i]
		name := plan.DisplayShard(s.Shard)
		all = append(all, fmt.Sprintf("%s (%d Stages)", name, s.Stages))
		switch {
		case s.Unreconciled():
			none = append(none, fmt.Sprintf("%s: %d Stages without a status, %d Promotions never picked up for over %s (%s)",
				name, s.Overdue, s.Waiting, timeout, examples(s.Examples)))
		case s.Lagging():
			lagging = append(lagging, fmt.Sprintf("%s: %d of %d Stages without a status, %d Promotions not picked up for over %s (%s)",
				name, s.Overdue, s.Stages, s.Waiting, timeout, examples(s.Examples)))
		}
	}
	switch {
	case len(none) > 0:
		return StatusFail, fmt.Sprintf("no Kargo controller reconciles shard(s) %s", examples(none)),
			"start a Kargo controller with SHARD_NAME=<shard> (IS_DEFAULT_CONTROLLER=false) for each, or change spec.shards " +
				"so that targets use shards that have one (docs/shards.md)"
	case len(lagging) > 0:
		return StatusWarn, fmt.Sprintf("the Kargo controller of shard(s) %s lags", examples(lagging)),
			"check that shard's Kargo controller: its logs, restarts, and that it reaches the API server"
	case len(all) == 0:
		return StatusOK, "no generated Stage yet: shards not checked", ""
	}
	return StatusOK, fmt.Sprintf("a Kargo controller reconciles every shard the fleet uses: %s", examples(all)), ""
}

// FreightCeilingVerdict judges the estimated status of a Freight current
// and verified in every named Stage of a Project: warn past
// kargo.FreightStatusWarnBytes, as the FleetStage's FreightStatusLarge
// condition does.
func FreightCeilingVerdict(project string, stages []string) (Status, string) {
	size := kargo.FreightStatusBytes(stages)
	longest := 0
	for _, s := range stages {
		longest = max(longest, len(s))
	}
	msg := fmt.Sprintf("a Freight in all %d Stages of Project %s would carry about %d KiB of status, %d%% of the API "+
		"server's %d KiB object limit (about %d Stages with names like the longest here)", len(stages), project,
		(size+1023)/1024, size*100/kargo.FreightObjectLimitBytes, kargo.FreightObjectLimitBytes/1024, kargo.MaxStagesPerFreight(longest))
	if size > kargo.FreightStatusWarnBytes {
		return StatusWarn, msg + ": past it Kargo cannot record where a Freight is and the fleet stops"
	}
	return StatusOK, msg
}
