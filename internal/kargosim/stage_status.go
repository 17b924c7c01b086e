package kargosim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// maxFreightHistory is how many freight collections a Stage remembers.
const maxFreightHistory = 10

// stageStatus is a Stage status being brought up to date in one pass; its
// methods are pure setters (time comes in as now).
type stageStatus struct {
	*kargo.StageStatus
	generation int64
	now        time.Time
	// verifiedInPending says the current Freight is verified but its
	// verifiedIn is not written yet: as on Kargo, where both happen in one
	// pass, the next Promotion waits for it.
	verifiedInPending bool
}

func (s stageStatus) setCondition(typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: s.generation, LastTransitionTime: metav1.Time{Time: s.now},
	})
}

func (s stageStatus) deletePromotingCondition() {
	typ := kargo.ConditionPromoting
	apimeta.RemoveStatusCondition(&s.Conditions, typ)
}

// phaseRank orders Promotions for the queue: Running, then Pending, then
// the terminal ones.
func phaseRank(p kargo.PromotionPhase) int {
	switch p {
	case kargo.PromotionRunning:
		return 0
	case kargo.PromotionPending, "":
		return 1
	default:
		return 2
	}
}

// comparePromotions sorts a Stage's Promotions by priority: Running first,
// then Pending, oldest (lowest name) first; then terminal ones, newest
// first.
func comparePromotions(a, b kargo.Promotion) int {
	if c := phaseRank(a.Status.Phase) - phaseRank(b.Status.Phase); c != 0 {
		return c
	}
	if !a.Status.Phase.IsTerminal() {
		return strings.Compare(a.Name, b.Name)
	}
	return strings.Compare(b.Name, a.Name)
}

// syncPromotions brings the Stage's view of its Promotions up to date, as
// Kargo's Stage reconciler does: records Promotions that finished since the
// last recorded one (freight history, last Promotion, auto-promotion holds)
// and picks the next Promotion to run once the current Freight is verified
// (or the Stage is unhealthy). It reports whether any Promotion is not yet
// terminal.
func (s stageStatus) syncPromotions(stage *kargo.Stage, promos []kargo.Promotion, autoEnabled bool) bool {
	requested := map[string]kargo.FreightOrigin{}
	for _, r := range stage.Spec.RequestedFreight {
		requested[r.Origin.Key()] = r.Origin
	}
	s.pruneHolds(requested, autoEnabled)
	if len(promos) == 0 {
		s.deletePromotingCondition()
		s.CurrentPromotion = nil
		return false
	}
	promos = slices.Clone(promos)
	slices.SortFunc(promos, comparePromotions)
	highest := promos[0]
	pending := slices.ContainsFunc(promos, func(p kargo.Promotion) bool { return !p.Status.Phase.IsTerminal() })

	if cur := s.CurrentPromotion; cur != nil && (cur.Name != highest.Name || highest.Status.Phase.IsTerminal()) {
		s.deletePromotingCondition()
		s.CurrentPromotion = nil
		s.recordAllFinished(promos, requested, autoEnabled)
		return pending
	}

	if cur := currentCollection(s.StageStatus); cur != nil {
		last := lastVerification(cur)
		if last != nil && !verificationTerminal(last.Phase) {
			s.deletePromotingCondition()
			return pending
		}
		if (s.Health == nil || s.Health.Status == kargo.HealthHealthy) && last == nil {
			s.deletePromotingCondition()
			return pending
		}
	}
	if s.verifiedInPending {
		s.deletePromotingCondition()
		return pending
	}
	if !highest.Status.Phase.IsTerminal() {
		s.setCondition(kargo.ConditionPromoting, metav1.ConditionTrue, "ActivePromotion",
			fmt.Sprintf("Promotion %q is currently %s", highest.Name, highest.Status.Phase))
		s.CurrentPromotion = &kargo.PromotionReference{Name: highest.Name}
		if highest.Status.Freight != nil {
			f := *highest.Status.Freight
			s.CurrentPromotion.Freight = &f
		}
		return pending
	}
	s.deletePromotingCondition()
	return pending
}

// pruneHolds drops the auto-promotion holds of origins the Stage no longer
// requests, and every hold when auto-promotion is off.
func (s stageStatus) pruneHolds(requested map[string]kargo.FreightOrigin, autoEnabled bool) {
	if !autoEnabled {
		s.AutoPromotionHolds = nil
		return
	}
	for k := range s.AutoPromotionHolds {
		if _, ok := requested[k]; !ok {
			delete(s.AutoPromotionHolds, k)
		}
	}
	if len(s.AutoPromotionHolds) == 0 {
		s.AutoPromotionHolds = nil
	}
}

// recordAllFinished records, oldest first, the Promotions that finished
// since the last recorded one.
func (s stageStatus) recordAllFinished(promos []kargo.Promotion, requested map[string]kargo.FreightOrigin, autoEnabled bool) {
	var finished []kargo.Promotion
	for _, p := range promos {
		if s.LastPromotion != nil && p.Name <= s.LastPromotion.Name {
			continue
		}
		if p.Status.Phase.IsTerminal() {
			finished = append(finished, p)
		}
	}
	slices.SortFunc(finished, func(a, b kargo.Promotion) int { return strings.Compare(a.Name, b.Name) })
	for i := range finished {
		s.recordFinished(&finished[i], requested, autoEnabled)
	}
}

// recordFinished records one finished Promotion.
func (s stageStatus) recordFinished(p *kargo.Promotion, requested map[string]kargo.FreightOrigin, autoEnabled bool) {
	if autoEnabled && p.Status.Phase != kargo.PromotionAborted {
		if key := p.Annotations[kargo.AutoPromotionHoldAnnotation]; key != "" {
			if origin, ok := requested[key]; ok {
				if s.AutoPromotionHolds == nil {
					s.AutoPromotionHolds = map[string]kargo.AutoPromotionHold{}
				}
				s.AutoPromotionHolds[key] = newHold(p, origin)
			}
		} else if key := p.Annotations[kargo.AutoPromotionResumeAnnotation]; key != "" {
			delete(s.AutoPromotionHolds, key)
			if len(s.AutoPromotionHolds) == 0 {
				s.AutoPromotionHolds = nil
			}
		}
	}
	ref := kargo.PromotionReference{Name: p.Name, Status: p.Status.DeepCopy(), FinishedAt: p.Status.FinishedAt}
	if p.Status.Freight != nil {
		f := *p.Status.Freight
		ref.Freight = &f
	}
	// A Promotion aborted before it ran has no collection: keep the last one
	// so later Promotions still inherit the Stage's other Freight.
	if p.Status.StartedAt == nil && ref.Status.FreightCollection == nil && s.LastPromotion != nil &&
		s.LastPromotion.Status != nil {
		ref.Status.FreightCollection = s.LastPromotion.Status.FreightCollection.DeepCopy()
	}
	s.LastPromotion = &ref
	if p.Status.Phase != kargo.PromotionSucceeded || ref.Status.FreightCollection == nil {
		return
	}
	col := *ref.Status.FreightCollection.DeepCopy()
	col.VerificationHistory = nil
	s.FreightHistory = append([]kargo.FreightCollection{col}, s.FreightHistory...)
	if len(s.FreightHistory) > maxFreightHistory {
		s.FreightHistory = s.FreightHistory[:maxFreightHistory]
	}
	s.Health = nil
	s.setCondition(kargo.ConditionHealthy, metav1.ConditionUnknown, "WaitingForHealthCheck",
		"Waiting for health check to be performed after successful promotion")
	s.setCondition(kargo.ConditionVerified, metav1.ConditionUnknown, "WaitingForVerification",
		"Waiting for verification to be performed after successful promotion")
}

func newHold(p *kargo.Promotion, origin kargo.FreightOrigin) kargo.AutoPromotionHold {
	h := kargo.AutoPromotionHold{FreightName: p.Spec.Freight, Origin: origin, PromotionName: p.Name,
		Actor: p.Annotations[kargo.CreateActorAnnotation]}
	if !p.CreationTimestamp.IsZero() {
		t := p.CreationTimestamp
		h.CreatedAt = &t
	}
	return h
}

func currentCollection(st *kargo.StageStatus) *kargo.FreightCollection {
	if len(st.FreightHistory) == 0 {
		return nil
	}
	return &st.FreightHistory[0]
}

func lastVerification(c *kargo.FreightCollection) *kargo.VerificationInfo {
	if c == nil || len(c.VerificationHistory) == 0 {
		return nil
	}
	return &c.VerificationHistory[0]
}

func verificationTerminal(phase string) bool {
	switch phase {
	case kargo.VerificationSuccessful, kargo.VerificationFailed, kargo.VerificationError, "Aborted", "Inconclusive":
		return true
	}
	return false
}

// assessHealth judges the Stage's health after its last Promotion: Unknown
// while promoting or after a failed Promotion, else Healthy (the simulator
// runs no Argo CD health checks) unless the Stage's fault says unhealthy.
func (s stageStatus) assessHealth(f faults) {
	switch {
	case s.CurrentPromotion != nil:
		s.setCondition(kargo.ConditionHealthy, metav1.ConditionUnknown, "ActivePromotion", "Stage has a Promotion in progress")
		s.Health = &kargo.Health{Status: kargo.HealthUnknown,
			Issues: []string{"Cannot assess health because a Promotion is currently in progress"}}
	case s.LastPromotion == nil:
		s.setCondition(kargo.ConditionHealthy, metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight")
		s.Health = nil
	case s.LastPromotion.Status == nil || s.LastPromotion.Status.Phase != kargo.PromotionSucceeded:
		phase := kargo.PromotionPhase("")
		if s.LastPromotion.Status != nil {
			phase = s.LastPromotion.Status.Phase
		}
		s.setCondition(kargo.ConditionHealthy, metav1.ConditionUnknown, "LastPromotion"+string(phase),
			"Cannot assess health because last Promotion did not succeed")
		s.Health = &kargo.Health{Status: kargo.HealthUnknown,
			Issues: []string{"Cannot assess health because last Promotion did not succeed"}}
	case f.fault == FaultUnhealthy:
		issue := "simulated: the Stage's fault injection says unhealthy"
		s.Health = &kargo.Health{Status: kargo.HealthUnhealthy, Issues: []string{issue}}
		s.setCondition(kargo.ConditionHealthy, metav1.ConditionFalse, kargo.HealthUnhealthy,
			"Stage is unhealthy (1 issues in 0 health checks)")
	default:
		s.Health = &kargo.Health{Status: kargo.HealthHealthy}
		s.setCondition(kargo.ConditionHealthy, metav1.ConditionTrue, kargo.HealthHealthy,
			"Stage is healthy (performed 0 health checks)")
	}
}

// verify verifies the current Freight once the Stage is healthy and no
// Promotion runs: at once, successfully unless the fault says otherwise.
// newID names the verification.
func (s stageStatus) verify(f faults, start time.Time, newID func() string) {
	cur := currentCollection(s.StageStatus)
	if cur == nil {
		s.setCondition(kargo.ConditionVerified, metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight to verify")
		return
	}
	if s.CurrentPromotion != nil {
		return
	}
	if lastVerification(cur) == nil && s.Health != nil && s.Health.Status == kargo.HealthHealthy {
		vi := kargo.VerificationInfo{ID: newID(), StartTime: &metav1.Time{Time: start},
			FinishTime: &metav1.Time{Time: s.now}, Phase: kargo.VerificationSuccessful}
		if f.fault == FaultFailVerification {
			vi.Phase = kargo.VerificationFailed
			vi.Message = "simulated: the Stage's fault injection fails verification"
		}
		cur.VerificationHistory = append([]kargo.VerificationInfo{vi}, cur.VerificationHistory...)
	}
	for _, vi := range cur.VerificationHistory {
		if vi.Phase == kargo.VerificationSuccessful {
			s.setCondition(kargo.ConditionVerified, metav1.ConditionTrue, "Verified", "Freight has been verified")
			return
		}
	}
	if last := lastVerification(cur); last != nil {
		switch last.Phase {
		case kargo.VerificationFailed, kargo.VerificationError:
			s.setCondition(kargo.ConditionVerified, metav1.ConditionFalse, "Verification"+last.Phase, last.Message)
		case kargo.VerificationRunning:
			s.setCondition(kargo.ConditionVerified, metav1.ConditionUnknown, "VerificationRunning",
				"Freight is currently being verified")
		}
	}
}
