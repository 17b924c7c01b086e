package plan

import (
	"fmt"
	"strings"
	"time"
)

// ScheduleIndex is a plan prepared for repeated scheduling: for every wave
// member it holds which change windows apply and which constraint group it
// counts in, so that a scheduling decision only looks these up. Build it once
// per plan and policy; it is immutable and safe for concurrent use as long as
// the plan it was built from is not modified.
type ScheduleIndex struct {
	policy *CompiledPolicy
	waves  []indexedWave
	// members maps a target ID to its wave and position.
	members map[string]memberRef
	// groupOf maps, per constraint, a label value to a dense group number.
	groupOf []map[string]int32
	// shardOf maps a limited shard to a dense number; shardLimit[n] is its
	// limit and shardName[n] its name.
	shardOf    map[string]int32
	shardLimit []int
	shardName  []string
}

// indexedWave is one wave of a ScheduleIndex.
type indexedWave struct {
	name          string
	maxConcurrent int
	members       []*Target
	// windowMasks[i] has bit w set when window w applies to members[i].
	windowMasks []uint32
	// groups[i*len(constraints)+c] is the group of members[i] under
	// constraint c, or -1 when the constraint does not apply to it.
	groups []int32
	// shards[i] is the number of members[i]'s shard, or -1 when its shard
	// is not limited; nil when no shard is.
	shards []int32
}

// memberRef locates a member in the index.
type memberRef struct {
	wave, pos int32
}

// NewScheduleIndex prepares plan for scheduling under policy (nil: no
// windows and no constraints).
func NewScheduleIndex(plan *WavePlan, policy *CompiledPolicy) *ScheduleIndex {
	if policy == nil {
		policy = &CompiledPolicy{}
	}
	nc := len(policy.constraints)
	idx := &ScheduleIndex{
		policy:  policy,
		waves:   make([]indexedWave, len(plan.Waves)),
		members: make(map[string]memberRef, plan.Members()),
		groupOf: make([]map[string]int32, nc),
		shardOf: map[string]int32{},
	}
	limitShards := policy.shardLimits.any()
	for c := range idx.groupOf {
		idx.groupOf[c] = map[string]int32{}
	}
	for wi := range plan.Waves {
		pw := &plan.Waves[wi]
		iw := indexedWave{
			name:          pw.Name,
			maxConcurrent: pw.MaxConcurrent,
			members:       make([]*Target, len(pw.Members)),
			windowMasks:   make([]uint32, len(pw.Members)),
			groups:        make([]int32, len(pw.Members)*nc),
		}
		if limitShards {
			iw.shards = make([]int32, len(pw.Members))
		}
		for i := range pw.Members {
			t := &pw.Members[i]
			iw.members[i] = t
			if limitShards {
				iw.shards[i] = idx.internShard(t.Shard)
			}
			iw.windowMasks[i] = policy.windows.applicable(t)
			for c := range policy.constraints {
				iw.groups[i*nc+c] = idx.internGroup(c, t)
			}
			idx.members[t.ID] = memberRef{wave: int32(wi), pos: int32(i)}
		}
		idx.waves[wi] = iw
	}
	return idx
}

// internGroup returns t's group number under constraint c, creating it.
func (idx *ScheduleIndex) internGroup(c int, t *Target) int32 {
	v, ok := idx.policy.constraints[c].group(t)
	if !ok {
		return -1
	}
	g, ok := idx.groupOf[c][v]
	if !ok {
		g = int32(len(idx.groupOf[c]))
		idx.groupOf[c][v] = g
	}
	return g
}

// internShard returns the number of a limited shard, creating it, or -1
// when the shard is not limited.
func (idx *ScheduleIndex) internShard(shard string) int32 {
	if n, ok := idx.shardOf[shard]; ok {
		return n
	}
	limit, ok := idx.policy.shardLimits.Limit(shard)
	if !ok {
		return -1
	}
	n := int32(len(idx.shardLimit))
	idx.shardOf[shard] = n
	idx.shardLimit = append(idx.shardLimit, limit)
	idx.shardName = append(idx.shardName, shard)
	return n
}

// InFlightTarget is a target with a running target Promotion.
type InFlightTarget struct {
	// Target is the target; its labels are what constraints count.
	Target Target
	// Rollout names the FleetRollout that started the Promotion.
	Rollout string
}

// ScheduleRequest is the state a scheduling decision is made from.
type ScheduleRequest struct {
	// Wave is the name of the wave being run.
	Wave string
	// Rollout names the FleetRollout asking. Its own in-flight members of
	// Wave count against the wave's maxConcurrent.
	Rollout string
	// InFlight are the targets with a running Promotion in EVERY rollout of
	// the FleetStage: all of them count against constraints, and a member in
	// flight for another rollout is busy.
	InFlight []InFlightTarget
	// Done says which members of the wave this rollout has finished
	// (succeeded or failed): Done[i] for the wave's i-th member in plan
	// order; members past its end are not done. By position, not by name:
	// a decision knows each member's state where it lies, and a set of
	// names would be built anew for every decision of a large wave.
	Done []bool
	// Paused stops every new start.
	Paused bool
	// MaxConcurrent, when positive, replaces the wave's maxConcurrent (a
	// rollback runs with its own concurrency).
	MaxConcurrent int
	// Now is the instant the decision is for. The caller passes its clock.
	Now time.Time
}

// WaitReason says why no (further) target may start.
type WaitReason string

// Wait reasons.
const (
	// WaitPaused: the rollout is paused.
	WaitPaused WaitReason = "Paused"
	// WaitUnknownWave: the index has no wave of that name.
	WaitUnknownWave WaitReason = "UnknownWave"
	// WaitWaveDone: every member is done.
	WaitWaveDone WaitReason = "WaveDone"
	// WaitInFlight: every member not done is in flight.
	WaitInFlight WaitReason = "InFlight"
	// WaitMaxConcurrent: the wave's maxConcurrent members are in flight.
	WaitMaxConcurrent WaitReason = "MaxConcurrent"
	// WaitWindow: the change windows forbid starting the pending members now;
	// ScheduleDecision.RetryAt says when the first of them may start.
	WaitWindow WaitReason = "OutsideWindow"
	// WaitConstraint: a constraint's limit is reached for the pending members.
	WaitConstraint WaitReason = "ConstraintLimit"
	// WaitTargetBusy: the pending members are in flight for another rollout.
	WaitTargetBusy WaitReason = "TargetBusy"
	// WaitShardLimit: the pending members' shards have their
	// spec.shards maxConcurrent target Promotions in flight.
	WaitShardLimit WaitReason = "ShardLimit"
)

// ScheduleDecision is what Schedule decided.
type ScheduleDecision struct {
	// Start are the members to start now, in promotion order.
	Start []*Target
	// Waiting is why nothing (more) may start; empty when every free slot
	// was filled or Start holds every pending member.
	Waiting WaitReason
	// Message explains Waiting for humans.
	Message string
	// RetryAt, when not zero, is the earliest instant a member blocked by
	// change windows may start: the time to requeue at. It is zero when
	// nothing waits for a window or when no opening was found.
	RetryAt time.Time
	// BlockedByWindow, BlockedByConstraint, BlockedByShard and Busy count
	// pending members that could not start for each reason. They are
	// complete whenever Waiting is set; when every slot was filled the scan
	// stopped early.
	BlockedByWindow, BlockedByConstraint, BlockedByShard, Busy int
}

// Schedule decides which members of req.Wave start now: in promotion order,
// skipping members done or in flight, as long as the wave's maxConcurrent
// leaves room, the change windows allow the member and no constraint group
// of the member is full. It is pure: time comes from req.Now.
func Schedule(idx *ScheduleIndex, req ScheduleRequest) ScheduleDecision {
	if req.Paused {
		return ScheduleDecision{Waiting: WaitPaused, Message: "the rollout is paused"}
	}
	wi := -1
	for i := range idx.waves {
		if idx.waves[i].name == req.Wave {
			wi = i
			break
		}
	}
	if wi < 0 {
		return ScheduleDecision{Waiting: WaitUnknownWave, Message: fmt.Sprintf("the plan has no wave %q", req.Wave)}
	}
	s := newScheduler(idx, wi, &req)
	return s.run()
}

// scheduler holds the state of one Schedule call.
type scheduler struct {
	idx  *ScheduleIndex
	wave *indexedWave
	req  *ScheduleRequest
	// inFlight maps in-flight IDs to the rollout that runs them.
	inFlight map[string]string
	// counts[c][g] is the number of in-flight targets in group g of constraint c.
	counts [][]int
	// shardCounts[n] is the number of in-flight targets on limited shard n.
	shardCounts []int
	open        uint32
	slots       int
}

func newScheduler(idx *ScheduleIndex, wi int, req *ScheduleRequest) *scheduler {
	w := &idx.waves[wi]
	s := &scheduler{
		idx:      idx,
		wave:     w,
		req:      req,
		inFlight: make(map[string]string, len(req.InFlight)),
		counts:   make([][]int, len(idx.policy.constraints)),
		open:     idx.policy.windows.openBits(req.Now),
	}
	s.shardCounts = make([]int, len(idx.shardLimit))
	for c := range s.counts {
		s.counts[c] = make([]int, len(idx.groupOf[c]))
	}
	limit := w.maxConcurrent
	if req.MaxConcurrent > 0 {
		limit = req.MaxConcurrent
	}
	own := 0
	for i := range req.InFlight {
		f := &req.InFlight[i]
		if _, dup := s.inFlight[f.Target.ID]; dup {
			continue
		}
		s.inFlight[f.Target.ID] = f.Rollout
		if ref, ok := idx.members[f.Target.ID]; ok && f.Rollout == req.Rollout && int(ref.wave) == wi {
			own++
		}
		s.countInFlight(&f.Target)
	}
	s.slots = limit - own
	return s
}

// countInFlight adds an in-flight target to the constraint counts. Targets
// of other rollouts may not be in this plan: their group is looked up by
// label value, and a value no member shares cannot block anyone here.
func (s *scheduler) countInFlight(t *Target) {
	for c := range s.idx.policy.constraints {
		v, ok := s.idx.policy.constraints[c].group(t)
		if !ok {
			continue
		}
		if g, ok := s.idx.groupOf[c][v]; ok {
			s.counts[c][g]++
		}
	}
	if n, ok := s.idx.shardOf[t.Shard]; ok {
		s.shardCounts[n]++
	}
}

// scan is what one scan of a wave learns besides its starts: how many
// members are pending or in flight, and the first window, constraint group
// and shard that held a member back, to say why the others wait.
type scan struct {
	pending, inFlightHere int
	// blockedMasks collects the window masks of window-blocked members, to
	// compute RetryAt once per distinct mask.
	blockedMasks map[uint32]struct{}
	firstBlocked int
	constraintC  int
	constraintG  int32
	blockedShard int32
}

// run scans the wave in promotion order.
func (s *scheduler) run() ScheduleDecision {
	var d ScheduleDecision
	sc := scan{firstBlocked: -1, constraintC: -1, blockedShard: -1}
	w := s.wave
	if s.slots <= 0 {
		return ScheduleDecision{
			Waiting: WaitMaxConcurrent,
			Message: fmt.Sprintf("%d targets of wave %s are in flight, its maxConcurrent", s.slotsLimit(), w.name),
		}
	}
	for i, t := range w.members {
		if i < len(s.req.Done) && s.req.Done[i] {
			continue
		}
		if rollout, ok := s.inFlight[t.ID]; ok {
			if rollout != s.req.Rollout {
				d.Busy++
			} else {
				sc.inFlightHere++
			}
			continue
		}
		sc.pending++
		if !s.admit(&d, &sc, i) {
			continue
		}
		d.Start = append(d.Start, t)
		if len(d.Start) == s.slots {
			return d
		}
	}
	d.RetryAt = s.nextOpening(sc.blockedMasks)
	if len(d.Start) > 0 && len(d.Start) == sc.pending {
		return d
	}
	switch {
	case sc.pending == 0 && sc.inFlightHere == 0 && d.Busy == 0:
		d.Waiting, d.Message = WaitWaveDone, fmt.Sprintf("every target of wave %s is done", w.name)
	case sc.pending == 0 && d.Busy == 0:
		d.Waiting, d.Message = WaitInFlight, fmt.Sprintf("%d targets of wave %s are in flight; none is pending",
			sc.inFlightHere, w.name)
	default:
		// Nothing or not everything could start: say why the others wait.
		d.Waiting, d.Message = s.blockedReason(&d, sc.firstBlocked, sc.constraintC, sc.constraintG, sc.blockedShard)
	}
	return d
}

// admit says whether pending member i starts: its change windows, its
// constraint groups and its shard, in that order, may hold it back, and the
// first that does is counted. A member that starts takes its place in the
// in-flight counts of its groups and shard.
func (s *scheduler) admit(d *ScheduleDecision, sc *scan, i int) bool {
	w := s.wave
	nc := len(s.idx.policy.constraints)
	if mask := w.windowMasks[i]; mask != 0 && !s.idx.policy.windows.allowed(mask, s.open) {
		d.BlockedByWindow++
		if sc.blockedMasks == nil {
			sc.blockedMasks = map[uint32]struct{}{}
			sc.firstBlocked = i
		}
		sc.blockedMasks[mask] = struct{}{}
		return false
	}
	groups := w.groups[i*nc : (i+1)*nc]
	for c, g := range groups {
		if g >= 0 && s.counts[c][g] >= s.idx.policy.constraints[c].maxInFlight {
			d.BlockedByConstraint++
			if sc.constraintC < 0 {
				sc.constraintC, sc.constraintG = c, g
			}
			return false
		}
	}
	shard := int32(-1)
	if w.shards != nil {
		shard = w.shards[i]
	}
	if shard >= 0 && s.shardCounts[shard] >= s.idx.shardLimit[shard] {
		d.BlockedByShard++
		if sc.blockedShard < 0 {
			sc.blockedShard = shard
		}
		return false
	}
	for c, g := range groups {
		if g >= 0 {
			s.counts[c][g]++
		}
	}
	if shard >= 0 {
		s.shardCounts[shard]++
	}
	return true
}

// nextOpening is the earliest time one of the window masks allows a start;
// zero when none opens.
func (s *scheduler) nextOpening(masks map[uint32]struct{}) time.Time {
	var next time.Time
	for mask := range masks {
		if at, ok := s.idx.policy.windows.nextAllowed(mask, s.req.Now); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// slotsLimit is the maxConcurrent in force.
func (s *scheduler) slotsLimit() int {
	if s.req.MaxConcurrent > 0 {
		return s.req.MaxConcurrent
	}
	return s.wave.maxConcurrent
}

// blockedReason names the reason blocking the most pending members; on a
// tie, windows come first (they say until when), then constraints, then
// shard limits.
func (s *scheduler) blockedReason(d *ScheduleDecision, firstBlocked, c int, g, shard int32) (WaitReason, string) {
	switch {
	case d.BlockedByWindow > 0 && d.BlockedByWindow >= d.BlockedByConstraint && d.BlockedByWindow >= d.Busy:
		msg := fmt.Sprintf("%d targets wait for a change window (%s)", d.BlockedByWindow,
			s.windowExplanation(s.wave.windowMasks[firstBlocked]))
		if !d.RetryAt.IsZero() {
			msg += "; next opening " + d.RetryAt.UTC().Format(time.RFC3339)
		} else {
			msg += "; no opening found in the schedules"
		}
		return WaitWindow, msg
	case d.BlockedByConstraint > 0 && d.BlockedByConstraint >= d.BlockedByShard && d.BlockedByConstraint >= d.Busy:
		cc := &s.idx.policy.constraints[c]
		return WaitConstraint, fmt.Sprintf("%d targets wait for constraint %s: %s=%s already has %d in flight (max %d)",
			d.BlockedByConstraint, cc.name, cc.labelKey, s.groupValue(c, g), s.counts[c][g], cc.maxInFlight)
	case d.BlockedByShard > 0 && d.BlockedByShard >= d.Busy:
		return WaitShardLimit, fmt.Sprintf("%d targets wait for their shard: shard %s already has %d target Promotions in flight (spec.shards maxConcurrent %d)",
			d.BlockedByShard, DisplayShard(s.idx.shardName[shard]), s.shardCounts[shard], s.idx.shardLimit[shard])
	default:
		return WaitTargetBusy, fmt.Sprintf("%d targets are in flight for another rollout", d.Busy)
	}
}

// groupValue is the label value of group g of constraint c.
func (s *scheduler) groupValue(c int, g int32) string {
	for v, gg := range s.idx.groupOf[c] {
		if gg == g {
			return v
		}
	}
	return ""
}

// windowExplanation names the windows keeping a member with mask waiting.
func (s *scheduler) windowExplanation(mask uint32) string {
	ws := &s.idx.policy.windows
	var denies, allows []string
	for i, w := range ws.windows {
		bit := uint32(1) << i
		if mask&bit == 0 {
			continue
		}
		if w.deny && s.open&bit != 0 {
			denies = append(denies, w.name)
		} else if !w.deny {
			allows = append(allows, w.name)
		}
	}
	if len(denies) > 0 {
		return "deny window " + strings.Join(denies, ", ") + " is open"
	}
	return "no allow window open: " + strings.Join(allows, ", ")
}
