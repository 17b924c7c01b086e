package doctor

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
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
	// Stages counts the Stages on the shard and Targets the target Stages
	// among them; Reconciled those that got a status from a Kargo
	// controller; Overdue those older than the timeout that got none.
	Stages, Targets, Reconciled, Overdue int
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
		if st.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			s.Targets++
		}
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

// ShardHeartbeat is what the heartbeat Leases of one shard's Kargo
// controllers say.
type ShardHeartbeat struct {
	// Alive tells whether one of them was renewed within its duration.
	Alive bool
	// Renewed is the latest renewal (zero: never renewed) and Duration
	// that Lease's duration.
	Renewed  time.Time
	Duration time.Duration
}

// Heartbeats is what doctor read of the Kargo controllers' heartbeat
// Leases (kargo.HeartbeatLeaseName) in Kargo's namespace.
type Heartbeats struct {
	// Namespace is Kargo's namespace, where the Leases were read.
	Namespace string
	// ByShard holds each shard with a heartbeat Lease ("" for a controller
	// without SHARD_NAME); empty when the namespace holds none (a Kargo
	// older than its heartbeats, or not Kargo's namespace) or ReadErr.
	ByShard map[string]ShardHeartbeat
	// ReadErr says why the Leases could not be listed.
	ReadErr error
}

// ReadHeartbeats judges each heartbeat Lease at now and groups them by
// shard; Leases without the controller label are ignored.
func ReadHeartbeats(namespace string, leases []coordinationv1.Lease, now time.Time) Heartbeats {
	hb := Heartbeats{Namespace: namespace, ByShard: map[string]ShardHeartbeat{}}
	for i := range leases {
		l := &leases[i]
		shard, ok := kargo.HeartbeatShard(l)
		if !ok {
			continue
		}
		beat := hb.ByShard[shard]
		beat.Alive = beat.Alive || kargo.HeartbeatAlive(l, now)
		if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(beat.Renewed) {
			beat.Renewed = l.Spec.RenewTime.Time
			beat.Duration = 0
			if l.Spec.LeaseDurationSeconds != nil {
				beat.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
		}
		hb.ByShard[shard] = beat
	}
	return hb
}

// describe says why a shard's heartbeat is not alive.
func (hb Heartbeats) describe(shard string, now time.Time) string {
	name := hb.Namespace + "/" + kargo.HeartbeatLeaseName(shard)
	beat, ok := hb.ByShard[shard]
	switch {
	case !ok:
		return "no heartbeat Lease " + name
	case beat.Renewed.IsZero():
		return "heartbeat Lease " + name + " never renewed"
	}
	return fmt.Sprintf("heartbeat Lease %s last renewed %s ago, more than its %s duration",
		name, now.Sub(beat.Renewed).Round(time.Second), beat.Duration)
}

// heartbeatFix is the fix for shards whose controllers have no live
// heartbeat.
func (hb Heartbeats) heartbeatFix(shards []string) string {
	fixes := make([]string, len(shards))
	for i, shard := range shards {
		fixes[i] = fmt.Sprintf("SHARD_NAME=%s (kubectl get lease -n %s %s)", shard, hb.Namespace, kargo.HeartbeatLeaseName(shard))
	}
	return "start, or check the logs and restarts of, the Kargo controller with " + examples(fixes) +
		", or change spec.shards so that targets use shards that have one (docs/shards.md)"
}

// ShardVerdict turns the shard states into doctor's verdict: fail when a
// shard has no Kargo controller, warn when one lags, else ok. While Kargo's
// namespace holds heartbeat Leases, a shard is served exactly when one of
// its Leases is alive; the Stages without a shard, whose default controller
// may run under any SHARD_NAME, are judged by an alive unnamed Lease or
// else by what the controllers wrote. Without any heartbeat Lease (an older
// Kargo) every shard is judged by what the controllers wrote: a Stage
// without a status, or a Promotion without a phase, for longer than
// timeout.
func ShardVerdict(states []ShardState, hb Heartbeats, now time.Time, timeout time.Duration) (Status, string, string) {
	var none, lagging, all, dead []string
	beating, defaultByStatus := len(hb.ByShard) > 0, false
	for i := range states {
		s := &states[i]
		name := plan.DisplayShard(s.Shard)
		all = append(all, fmt.Sprintf("%s (%d Stages)", name, s.Stages))
		beat := hb.ByShard[s.Shard]
		switch {
		case beating && beat.Alive:
			if s.Overdue+s.Waiting > 0 {
				lagging = append(lagging, fmt.Sprintf("%s: its heartbeat is live, but %d of %d Stages are without a status, "+
					"%d Promotions not picked up for over %s (%s)", name, s.Overdue, s.Stages, s.Waiting, timeout, examples(s.Examples)))
			}
		case beating && s.Shard != "":
			dead = append(dead, s.Shard)
			none = append(none, fmt.Sprintf("%s: %s, %s", name, onShard(s), hb.describe(s.Shard, now)))
		case s.Unreconciled():
			// No heartbeat at all, or the default shard without a live
			// unnamed Lease: judged by what the controllers wrote.
			none = append(none, fmt.Sprintf("%s: %d Stages without a status, %d Promotions never picked up for over %s (%s)",
				name, s.Overdue, s.Waiting, timeout, examples(s.Examples)))
		case s.Lagging():
			lagging = append(lagging, fmt.Sprintf("%s: %d of %d Stages without a status, %d Promotions not picked up for over %s (%s)",
				name, s.Overdue, s.Stages, s.Waiting, timeout, examples(s.Examples)))
		}
		if beating && s.Shard == "" && !beat.Alive {
			defaultByStatus = true
		}
	}
	how := hb.how(defaultByStatus)
	switch {
	case len(none) > 0:
		var fixes []string
		if len(dead) > 0 {
			fixes = append(fixes, hb.heartbeatFix(dead))
		}
		if len(dead) < len(none) {
			fixes = append(fixes, "start a Kargo controller with SHARD_NAME=<shard> (IS_DEFAULT_CONTROLLER=false) for each, or change "+
				"spec.shards so that targets use shards that have one (docs/shards.md)")
		}
		return StatusFail, fmt.Sprintf("no Kargo controller reconciles shard(s) %s%s", examples(none), how), strings.Join(fixes, "; ")
	case len(lagging) > 0:
		return StatusWarn, fmt.Sprintf("the Kargo controller of shard(s) %s lags%s", examples(lagging), how),
			"check that shard's Kargo controller: its logs, restarts, and that it reaches the API server"
	case len(all) == 0:
		return StatusOK, "no generated Stage yet: shards not checked", ""
	}
	return StatusOK, fmt.Sprintf("a Kargo controller reconciles every shard the fleet uses: %s%s", examples(all), how), ""
}

// onShard counts a shard's target Stages, and its other Stages if any.
func onShard(s *ShardState) string {
	out := fmt.Sprintf("%d target Stages", s.Targets)
	if other := s.Stages - s.Targets; other > 0 {
		out += fmt.Sprintf(" and %d other Stages", other)
	}
	return out
}

// how says, at the end of a verdict, what the shards were judged by;
// defaultByStatus when the default shard had no live unnamed Lease.
func (hb Heartbeats) how(defaultByStatus bool) string {
	switch {
	case hb.ReadErr != nil:
		return fmt.Sprintf(" (the Kargo controllers' heartbeat Leases in namespace %s could not be listed: %v; judged by "+
			"Stage statuses and Promotion phases instead)", hb.Namespace, hb.ReadErr)
	case len(hb.ByShard) == 0:
		return fmt.Sprintf(" (no Kargo controller heartbeat Lease in namespace %s, as with a Kargo older than its heartbeats "+
			"or another Kargo namespace (--kargo-namespace): judged by Stage statuses and Promotion phases)", hb.Namespace)
	case defaultByStatus:
		return fmt.Sprintf(" (judged by the Kargo controllers' heartbeat Leases in namespace %s; the default shard, "+
			"without a live %s Lease, by Stage statuses and Promotion phases)", hb.Namespace, kargo.HeartbeatLeaseName(""))
	}
	return fmt.Sprintf(" (judged by the Kargo controllers' heartbeat Leases in namespace %s)", hb.Namespace)
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
