package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// creator is who creates a Promotion: the admission request's user, the
// create-actor Kargo's webhook wrote before the guards look, and whether
// the Promotion carries the controller's mark.
type creator struct {
	user, actor string
	marked      bool
}

const controllerUser = "system:serviceaccount:kargo-fleet:kargo-fleet-controller"

var (
	alice      = creator{user: "alice", actor: "kubernetes:alice"}
	controller = creator{user: controllerUser, actor: "kubernetes:" + controllerUser, marked: true}
	kargoAuto  = creator{user: "system:serviceaccount:kargo:kargo-controller"}
	kargoUI    = creator{user: "system:serviceaccount:kargo:kargo-api", actor: "email:alice@example.com"}
)

// guardCase is one Promotion into target Stage prod.c1 of fleet prod, and
// what the world around it says.
type guardCase struct {
	name    string
	by      creator
	labels  map[string]string
	reason  string
	facts   PromotionFacts
	heldBad bool // the fleet's rollout of f2 breached
	retry   bool // the FleetStage's retry-freight annotation names f2
	want    bool // allowed where the admission guard enforces the rule
	glass   bool // allowed as break-glass
	wantOff bool // allowed where an administrator turned the admission guard off
}

func (c guardCase) promotion() *kargo.Promotion {
	p := kargo.NewPromotion("shop", "prod.c1", "f2", c.labels, map[string]string{})
	p.Name = "prod.c1.01jz.f2"
	if c.by.actor != "" {
		p.Annotations[kargo.CreateActorAnnotation] = c.by.actor
	}
	if c.reason != "" {
		p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation] = c.reason
	}
	return p
}

// world fills the facts both guards look up the same way: the fleet, the
// Stage's role, whether the Freight is held back (fleetrollout.HeldBack
// over the fleet's rollouts).
func (c guardCase) world() PromotionFacts {
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod", Annotations: map[string]string{}},
		Spec: fleetv1alpha1.FleetStageSpec{Waves: []fleetv1alpha1.Wave{{Name: "pilot"}}}}
	if c.retry {
		fs.Annotations[fleetv1alpha1.RetryFreightAnnotation] = "f2"
	}
	var rollouts []*fleetv1alpha1.FleetRollout
	if c.heldBad {
		ro := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: "prod-f2"},
			Spec: fleetv1alpha1.FleetRolloutSpec{Direction: fleetv1alpha1.DirectionForward,
				Freight: fleetv1alpha1.FreightReference{Name: "f2"}},
			Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed}}
		meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
			Status: metav1.ConditionTrue, Reason: "Breached"})
		rollouts = append(rollouts, ro)
	}
	f := c.facts
	f.FleetStage, f.Role = StageRoleIn([]fleetv1alpha1.FleetStage{*fs}, "prod.c1")
	if held := fleetrollout.HeldBack(fs, rollouts, "f2"); held != nil {
		f.HeldBackBy = held.Name
	}
	return f
}

// The admission guard and the post-hoc target guard ask one rule: each
// case, built as the admission guard builds it from the admission request
// and as the target guard builds it from the Promotion after the fact,
// gets the same answer; the target guard then refuses exactly what the
// rule refuses.
func TestGuardsAskOneRule(t *testing.T) {
	t.Parallel()
	glassLabel := map[string]string{fleetv1alpha1.BreakGlassLabel: "prod"}
	open := PromotionFacts{DecisionOpen: true}
	for _, c := range []guardCase{
		{name: "a person without break-glass", by: alice, wantOff: true},
		{name: "a person with a break-glass reason but not the right", by: alice, labels: glassLabel, reason: "INC-1", wantOff: true},
		{name: "a person with the break-glass right", by: alice, labels: glassLabel, reason: "INC-1",
			facts: PromotionFacts{BreakGlassAllowed: true}, want: true, glass: true, wantOff: true},
		{name: "break-glass with the right but without the label", by: alice, reason: "INC-1",
			facts: PromotionFacts{BreakGlassAllowed: true}, wantOff: true},
		{name: "break-glass through Kargo's API server, whatever RBAC grants it", by: kargoUI, labels: glassLabel,
			reason: "INC-1", facts: PromotionFacts{BreakGlassAllowed: true}, wantOff: true},
		{name: "the controller for an open rollout", by: controller,
			labels: map[string]string{fleetv1alpha1.RolloutLabel: "prod-f2"}, facts: open, want: true, wantOff: true},
		{name: "the controller for a finished rollout", by: controller,
			labels: map[string]string{fleetv1alpha1.RolloutLabel: "prod-f2"}},
		{name: "the controller naming no decision", by: controller, facts: open},
		{name: "the controller's drift revert", by: controller,
			labels: map[string]string{fleetv1alpha1.RevertLabel: "k1"}, facts: open, want: true, wantOff: true},
		{name: "the controller's drift revert of held-back Freight", by: controller, heldBad: true,
			labels: map[string]string{fleetv1alpha1.RevertLabel: "k1"}, facts: open, want: true, wantOff: true},
		{name: "a forged rollout label without the controller's mark", by: alice,
			labels: map[string]string{fleetv1alpha1.RolloutLabel: "prod-f2"}, facts: open, wantOff: true},
		{name: "Kargo's auto-promotion", by: kargoAuto},
		{name: "a person's held-back Freight", by: alice, heldBad: true},
		{name: "break-glass of held-back Freight", by: alice, heldBad: true, labels: glassLabel, reason: "INC-1",
			facts: PromotionFacts{BreakGlassAllowed: true}},
		{name: "held-back Freight the FleetStage retries", by: alice, heldBad: true, retry: true, wantOff: true},
		{name: "a FreightPolicy keeps the Freight off the target", by: controller,
			labels: map[string]string{fleetv1alpha1.RolloutLabel: "prod-f2"},
			facts:  PromotionFacts{DecisionOpen: true, PolicyBlocks: "rule pci of FreightPolicy pci: pinned only"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, f := c.promotion(), c.world()
			atCreate := AdmissionOfRequest(p, "shop", c.by.user, c.by.user == controllerUser,
				kargo.ControlPlaneUsers.MatchString(c.by.user), f)
			afterwards := AdmissionOfRecord(p, c.by.marked, f)
			want := AdmissionVerdict{Allowed: c.want, BreakGlass: c.glass}
			for name, a := range map[string]PromotionAdmission{"admission guard": atCreate, "target guard": afterwards} {
				got := JudgePromotionAdmission(a)
				require.Equal(t, want, AdmissionVerdict{Allowed: got.Allowed, BreakGlass: got.BreakGlass}, "%s: %s", name, got.Message)
			}
			for _, phase := range []kargo.PromotionPhase{kargo.PromotionRunning, kargo.PromotionSucceeded} {
				v := JudgeForeignPromotion(ForeignPromotion{Admission: afterwards, Phase: phase, Previous: "f1"})
				require.Equal(t, !c.want, v.Refuse, "target guard, %s Promotion: %s", phase, v.Reason)
				require.Equal(t, c.glass, v.BreakGlass)
				require.Equal(t, !c.want && phase == kargo.PromotionRunning, v.Abort, "a refused running Promotion is aborted")
				if !c.want && phase == kargo.PromotionSucceeded {
					require.Equal(t, "f1", v.Undo, "a refused Promotion that succeeded is undone")
				}
			}
			f.GuardOff = true
			off := JudgeForeignPromotion(ForeignPromotion{Admission: AdmissionOfRecord(p, c.by.marked, f),
				Phase: kargo.PromotionRunning})
			require.Equal(t, !c.wantOff, off.Refuse, "admission guard off: %s", off.Reason)
		})
	}
}
