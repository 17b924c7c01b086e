//go:build integration

package rollout_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// ringedFleet has one pilot, three canary and six general targets, chosen by
// their "ring" label. The canary targets break with the bad Freight only.
func ringedFleet(t *testing.T, ns string, policy fleetv1alpha1.FleetPolicy) *fleet {
	return ringedFleetGuarded(t, ns, policy, false)
}

// ringedFleetGuarded is ringedFleet, in a Project whose admission guard is
// off when guardOff.
func ringedFleetGuarded(t *testing.T, ns string, policy fleetv1alpha1.FleetPolicy, guardOff bool) *fleet {
	breaks := map[string]string{kargosim.FaultVar: kargosim.FaultFail, kargosim.FaultFreightVar: "f2-bad"}
	targets := append(inline("pilot", 1, map[string]string{"ring": "pilot"}, nil),
		inline("canary", 3, map[string]string{"ring": "canary"}, breaks)...)
	targets = append(targets, inline("general", 6, map[string]string{"ring": "general"}, nil)...)
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	return newFleet(t, ns, fleetSpec{
		targets: targets,
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: ring("pilot")},
			{Name: "canary", Selector: ring("canary"), MaxFailures: testutil.Int(0), MaxConcurrent: testutil.Int(3)},
			{Name: "general", Selector: ring("general"), MaxConcurrent: testutil.Int(3)},
		},
		policy:      policy,
		autoPromote: true,
		guardOff:    guardOff,
	})
}

func TestThresholdBreachHaltsAndRollsBackAutomatically(t *testing.T) {
	dumpPromotions(t, "breach-auto")
	// The admission guard is off in this Project: auto-Promotions of the
	// held-back Freight reach Kargo, and the post-hoc target guard (the
	// backstop) must stop them.
	f := ringedFleetGuarded(t, "breach-auto", fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}}, true)
	f.ship(f.good)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)
	require.Equal(t, f.good, f.lastGood())

	f.ship(f.bad)
	bad := f.rollout(f.bad, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, bad.Status.Phase, bad.Status.Message)
	breach := meta.FindStatusCondition(bad.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(t, breach)
	require.Equal(t, metav1.ConditionTrue, breach.Status)
	require.Contains(t, breach.Message, "wave canary")
	require.Equal(t, fleetv1alpha1.WaveSucceeded, bad.Status.Waves[0].Phase)
	require.Equal(t, fleetv1alpha1.WaveFailed, bad.Status.Waves[1].Phase)
	require.Equal(t, fleetv1alpha1.WavePending, bad.Status.Waves[2].Phase)
	require.Empty(t, f.promotionsOf(f.bad, "general"), "no general target was ever asked to take the bad Freight")

	rb := f.awaitRollback(f.good)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Equal(t, fleetrollout.RollbackName(bad.Name), rb.Name)
	require.Contains(t, rb.Annotations[fleetv1alpha1.RollbackReasonAnnotation], "threshold breached: wave canary",
		"the rollback says which breach it answers, for the wave Stages that describe it")
	require.EqualValues(t, 4, rb.Status.Snapshot.Targets, "exactly the targets the bad rollout moved: the pilot and the canary ring")
	require.Equal(t, []string{"canary", "pilot"}, []string{rb.Status.Waves[0].Name, rb.Status.Waves[1].Name}, "in reverse wave order")
	for _, p := range f.promotionsOf(f.good, "canary") {
		if p.Labels[fleetv1alpha1.RolloutLabel] == rb.Name {
			require.Equal(t, "true", p.Annotations[kargo.RollbackAnnotation], "rollback Promotions say so to Kargo")
		}
	}
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s is back on (or never left) the good Freight", id)
	}
	// The Kargo UI tells the truth: the pilot wave Stage, which took the bad
	// Freight, shows the good one again.
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "fleet-pilot"}, st) == nil &&
			slices.Equal(st.CurrentFreightNames(), []string{f.good})
	}, wait, tick, "the pilot wave Stage shows the Freight its targets run")

	// With auto-promotion on, Kargo still sees the bad Freight as verified in
	// the pilot wave Stage; it must never walk back into the fleet.
	time.Sleep(3 * time.Second)
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s", id)
	}
	require.Empty(t, f.promotionsOf(f.bad, "general"))
	promos := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), promos))
	for _, p := range promos.Items {
		if p.Namespace == f.ns && p.Spec.Freight == f.bad && p.Labels[fleetv1alpha1.RolloutLabel] != "" {
			require.Equal(t, bad.Name, p.Labels[fleetv1alpha1.RolloutLabel], "no second rollout of the bad Freight started")
		}
	}

	// Auto-promotion turned on for the target Stages too: Kargo promotes
	// what is verified upstream (or, for the first wave, the newest Freight)
	// into them, the held-back Freight included. kargo-fleet refuses every
	// such Promotion at once and says why.
	enableTargetAutoPromotion(t, f)
	onBadSince := map[string]time.Time{}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for id, freight := range f.targetFreight() {
			if freight != f.bad {
				delete(onBadSince, id)
				continue
			}
			if _, ok := onBadSince[id]; !ok {
				onBadSince[id] = time.Now()
			}
			require.Less(t, time.Since(onBadSince[id]), 2500*time.Millisecond,
				"target %s took the held-back Freight and kept it", id)
		}
	}
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s", id)
	}
	require.NoError(t, env.Client.List(context.Background(), promos, client.InNamespace(f.ns)))
	refused := 0
	for _, p := range promos.Items {
		if p.Spec.Freight == f.bad && p.Labels[fleetv1alpha1.RolloutLabel] == "" && strings.HasPrefix(p.Spec.Stage, "fleet.") {
			refused++
			if p.Status.Phase == kargo.PromotionAborted {
				require.Less(t, p.Status.FinishedAt.Sub(p.CreationTimestamp.Time), 3*time.Second, "refused within two seconds (one-second grain)")
				continue
			}
			require.Equal(t, kargo.PromotionSucceeded, p.Status.Phase, "auto-Promotion %s into %s", p.Name, p.Spec.Stage)
			undone := false
			for _, u := range promos.Items {
				undone = undone || (u.Spec.Stage == p.Spec.Stage && u.Spec.Freight == f.good && u.Labels[fleetv1alpha1.UndoesLabel] != "")
			}
			require.True(t, undone, "auto-Promotion %s succeeded before it could be aborted and was undone", p.Name)
		}
	}
	require.Positive(t, refused, "Kargo tried to auto-promote the held-back Freight into target Stages")
	requireEvent(t, f.ns, "ForeignPromotionRefused", "auto-promotion of Freight "+f.bad)

	// A Promotion whose labels claim it is the bad rollout's own (its
	// creator wrote them) carries no mark of the controller: the backstop
	// refuses the held-back Freight there as well.
	pilot := render.TargetStageName("fleet", "pilot-00")
	forged := kargo.NewPromotion(f.ns, pilot, f.bad, map[string]string{fleetv1alpha1.FleetStageLabel: "fleet",
		fleetv1alpha1.RolloutLabel: bad.Name, fleetv1alpha1.WaveLabel: "pilot", fleetv1alpha1.TargetLabel: "pilot-00"}, nil)
	require.NoError(t, env.Client.Create(context.Background(), forged))
	awaitRefusedOrUndone(t, f, forged, pilot)
	require.Eventually(t, func() bool { return f.targetFreight()["pilot-00"] == f.good }, wait, tick,
		"the target runs the good Freight again")

	// Nor does a break-glass label make it intended: its creator does not
	// hold the break-glass right, which the admission guard would have
	// checked had it been on.
	_, mallory := kargoPromoter(t, f.ns, "mallory-"+f.ns)
	glass := kargo.NewPromotion(f.ns, pilot, f.bad, map[string]string{fleetv1alpha1.BreakGlassLabel: "fleet"},
		map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: "INC-9"})
	require.NoError(t, mallory.Create(context.Background(), glass))
	awaitRefusedOrUndone(t, f, glass, pilot)
	require.Eventually(t, func() bool { return f.targetFreight()["pilot-00"] == f.good }, wait, tick,
		"the target runs the good Freight again")
	list := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	for _, e := range list.Items {
		require.False(t, e.Reason == "BreakGlassPromotion" && strings.Contains(e.Note, glass.Name),
			"a forged break-glass label is not recorded as intended: %s", e.Note)
	}
}

// awaitRefusedOrUndone waits until the target guard aborted p, or undid it
// with a Promotion of the good Freight into stage made after it.
func awaitRefusedOrUndone(t *testing.T, f *fleet, p *kargo.Promotion, stage string) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := &kargo.Promotion{}
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got) != nil {
			return false
		}
		if got.Status.Phase == kargo.PromotionAborted {
			return true
		}
		list := &kargo.PromotionList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
		for _, u := range list.Items {
			if u.Spec.Stage == stage && u.Spec.Freight == f.good && u.Labels[fleetv1alpha1.UndoesLabel] != "" &&
				!u.CreationTimestamp.Before(&got.CreationTimestamp) {
				return true
			}
		}
		return false
	}, wait, tick, "Promotion %s of held-back Freight is aborted or undone", p.Name)
}

// enableTargetAutoPromotion adds a ProjectConfig policy for the fleet's
// target Stages and refreshes them, as Kargo needs to take it into account.
func enableTargetAutoPromotion(t *testing.T, f *fleet) {
	t.Helper()
	ctx := context.Background()
	pc := &kargo.ProjectConfig{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.ns}, pc))
	pc.Spec.PromotionPolicies = append(pc.Spec.PromotionPolicies, kargo.PromotionPolicy{
		StageSelector: &kargo.PromotionPolicySelector{LabelSelector: metav1.LabelSelector{
			MatchLabels: map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget},
		}},
		AutoPromotionEnabled: true,
	})
	require.NoError(t, env.Client.Update(ctx, pc))
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(ctx, list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	for i := range list.Items {
		st := &list.Items[i]
		patch := client.MergeFrom(st.DeepCopy())
		metav1.SetMetaDataAnnotation(&st.ObjectMeta, kargo.RefreshAnnotation, "auto-promotion-on")
		require.NoError(t, env.Client.Patch(ctx, st, patch))
	}
}

// requireEvent waits for an Event of the reason whose note contains text.
func requireEvent(t *testing.T, ns, reason, text string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Note, text) {
				return true
			}
		}
		return false
	}, wait, tick, "no %s Event saying %q", reason, text)
}

func TestHeldBackFreightIsRefusedUntilRetriedDeliberately(t *testing.T) {
	dumpPromotions(t, "held-back")
	f := ringedFleet(t, "held-back", fleetv1alpha1.FleetPolicy{})
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	f.ship(f.bad)
	bad := f.rollout(f.bad, fleetv1alpha1.RolloutFailed)
	require.True(t, meta.IsStatusConditionTrue(bad.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition))

	// Someone promotes the bad Freight to the canary wave Stage again, as
	// `kargo promote` or Kargo's auto-promotion would: admission refuses it
	// before any step runs, and says how to retry deliberately.
	before := len(promotionsOfFreight(t, f.ns, f.bad))
	err := env.Client.Create(context.Background(), kargo.NewPromotion(f.ns, "fleet-canary", f.bad, nil, nil))
	require.Error(t, err)
	require.Contains(t, err.Error(), "held back")
	require.Contains(t, err.Error(), fleetv1alpha1.RetryFreightAnnotation, "the message says how to retry deliberately")
	require.Len(t, promotionsOfFreight(t, f.ns, f.bad), before, "no Promotion exists to run a step")

	// Deliberately allowed, it runs again from the first wave (and fails
	// again on the canary ring): only a Promotion of the first wave Stage
	// starts a rollout.
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(context.Background(), f.fleetKey, fs))
	retry := client.MergeFrom(fs.DeepCopy())
	metav1.SetMetaDataAnnotation(&fs.ObjectMeta, fleetv1alpha1.RetryFreightAnnotation, f.bad)
	require.NoError(t, env.Client.Patch(context.Background(), fs, retry), "an annotation patch does not race the controller's status writes")
	f.promote(f.bad, "pilot")
	require.Eventually(t, func() bool {
		n := 0
		list := &fleetv1alpha1.FleetRolloutList{}
		require.NoError(t, env.Client.List(context.Background(), list))
		for _, ro := range list.Items {
			if ro.Namespace == f.ns && ro.Spec.Freight.Name == f.bad {
				n++
			}
		}
		return n == 2
	}, wait, tick, "the deliberate retry starts a new rollout")
}

// promotionsOfFreight lists the Project's Promotions of freight.
func promotionsOfFreight(t *testing.T, ns, freight string) []kargo.Promotion {
	t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	var out []kargo.Promotion
	for _, p := range list.Items {
		if p.Spec.Freight == freight {
			out = append(out, p)
		}
	}
	return out
}
