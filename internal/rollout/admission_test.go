package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJudgePromotionAdmission(t *testing.T) {
	t.Parallel()
	target := func(mod func(*PromotionAdmission)) PromotionAdmission {
		a := PromotionAdmission{Project: "shop", FleetStage: "prod", Stage: "prod.c1", Freight: "f2",
			Role: StageTarget, FirstWaveStage: "prod-pilot", User: "system:serviceaccount:kargo:kargo-api",
			Actor: "kubernetes:alice"}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	tests := []struct {
		name           string
		in             PromotionAdmission
		wantAllowed    bool
		wantBreakGlass bool
		wantIn         []string
	}{
		{name: "a Stage outside any fleet is Kargo's business", in: PromotionAdmission{Stage: "dev"}, wantAllowed: true},
		{name: "the UI's Promote into a target is refused and says what works", in: target(nil),
			wantIn: []string{`Stage "prod.c1" is a target of fleet "prod"`, "kubernetes:alice",
				"kargo promote --project shop --stage prod-pilot --freight f2",
				"kargo approve --project shop --freight f2 --stage <wave Stage>", "kargo-fleet status prod -n shop",
				"kargo-fleet break-glass prod -n shop --stage prod.c1 --freight f2"}},
		{name: "auto-promotion into a target is refused", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor = "system:serviceaccount:kargo:kargo-controller", ""
		}), wantIn: []string{"only kargo-fleet promotes its targets", "(asked by system:serviceaccount:kargo:kargo-controller)"}},
		{name: "a FreightPolicy block refuses even the controller's Promotion for an open rollout", in: target(func(a *PromotionAdmission) {
			a.FromController, a.ControllerDecision, a.DecisionOpen = true, "FleetRollout prod-f2", true
			a.PolicyBlocks, a.PolicyAllowsBreakGlass = "rule pci-digest of FreightPolicy pci: pinned only", true
		}), wantIn: []string{`Freight f2 may not run on target Stage "prod.c1" of fleet "prod": rule pci-digest`}},
		{name: "a FreightPolicy block refuses break-glass unless the rule allows it", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor, a.BreakGlassReason, a.BreakGlassAllowed, a.BreakGlassLabel = "alice", "", "INC-1", true, "prod"
			a.PolicyBlocks = "rule pci-digest of FreightPolicy pci: pinned only"
		}), wantIn: []string{"may not run on target Stage", "Break-glass does not pass it: every rule that blocks it would have to say allowBreakGlass: true"}},
		{name: "break-glass passes a FreightPolicy rule that allows it", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor, a.BreakGlassReason, a.BreakGlassAllowed, a.BreakGlassLabel = "alice", "", "INC-1", true, "prod"
			a.PolicyBlocks, a.PolicyAllowsBreakGlass = "rule cn of FreightPolicy china: 2.0 or later", true
		}), wantAllowed: true, wantBreakGlass: true},
		{name: "a rule allowing break-glass still needs the right", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor, a.BreakGlassReason = "alice", "", "INC-1"
			a.PolicyBlocks, a.PolicyAllowsBreakGlass = "rule cn of FreightPolicy china: 2.0 or later", true
		}), wantIn: []string{"may not break glass"}},
		{name: "the controller's Promotion for an open rollout is admitted", in: target(func(a *PromotionAdmission) {
			a.FromController, a.ControllerDecision, a.DecisionOpen = true, "FleetRollout prod-f2", true
		}), wantAllowed: true},
		{name: "the controller's Promotion for a finished rollout is refused", in: target(func(a *PromotionAdmission) {
			a.FromController, a.ControllerDecision = true, "FleetRollout prod-f2"
		}), wantIn: []string{"FleetRollout prod-f2 is not open"}},
		{name: "the controller's Promotion without a decision is refused", in: target(func(a *PromotionAdmission) {
			a.FromController, a.DecisionOpen = true, true
		}), wantIn: []string{"names none"}},
		{name: "break-glass with the right is admitted and marked", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor, a.BreakGlassReason, a.BreakGlassAllowed, a.BreakGlassLabel = "alice", "kubernetes:alice", "INC-1", true, "prod"
		}), wantAllowed: true, wantBreakGlass: true},
		{name: "break-glass from an identity that acts for others is refused, whatever it was granted", in: target(func(a *PromotionAdmission) {
			a.BreakGlassReason, a.BreakGlassAllowed, a.ActsForOthers = "INC-1", true, true
		}), wantIn: []string{`refused from "system:serviceaccount:kargo:kargo-api"`, "no grant to it counts",
			"kargo-fleet break-glass prod -n shop --stage prod.c1 --freight f2"}},
		{name: "break-glass without the right is refused", in: target(func(a *PromotionAdmission) {
			a.User, a.Actor, a.BreakGlassReason = "bob", "kubernetes:bob", "INC-1"
		}), wantIn: []string{`user "bob" may not break glass on fleet "prod"`, `"break-glass"`, "kargo-fleet-break-glass"}},
		{name: "held-back Freight is refused even with the break-glass right", in: target(func(a *PromotionAdmission) {
			a.User, a.HeldBackBy, a.BreakGlassReason, a.BreakGlassAllowed = "alice", "prod-f2", "INC-1", true
		}), wantIn: []string{"Freight f2 is held back from fleet \"prod\"", "FleetRollout prod-f2",
			"kubectl annotate fleetstage prod -n shop fleet.kargo-fleet.io/retry-freight=f2"}},
		{name: "held-back Freight is refused on a wave Stage", in: target(func(a *PromotionAdmission) {
			a.Role, a.Stage, a.HeldBackBy = StageWave, "prod-general", "prod-f2"
		}), wantIn: []string{"is held back"}},
		{name: "the controller's own decisions are not second-guessed on held-back Freight", in: target(func(a *PromotionAdmission) {
			a.FromController, a.ControllerDecision, a.DecisionOpen, a.HeldBackBy = true, "drift revert", true, "prod-f2"
		}), wantAllowed: true},
		{name: "a wave Stage takes a person's Promotion", in: target(func(a *PromotionAdmission) {
			a.Role, a.Stage = StageWave, "prod-critical"
		}), wantAllowed: true},
		{name: "the template Stage is refused, even for the controller", in: target(func(a *PromotionAdmission) {
			a.Role, a.Stage, a.FromController, a.ControllerDecision, a.DecisionOpen = StageTemplate, "prod", true, "x", true
		}), wantIn: []string{`Stage "prod" is the template of fleet "prod"`, "kargo promote --project shop --stage prod-pilot"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := JudgePromotionAdmission(tc.in)
			require.Equal(t, tc.wantAllowed, got.Allowed, got.Message)
			require.Equal(t, tc.wantBreakGlass, got.BreakGlass)
			if tc.wantAllowed {
				require.Empty(t, got.Message)
				return
			}
			require.Contains(t, got.Message, "kargo-fleet: ")
			for _, s := range tc.wantIn {
				require.Contains(t, got.Message, s)
			}
		})
	}
}
