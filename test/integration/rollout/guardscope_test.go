//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/targetguard"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// guardCondition returns the match condition the controller keeps on each
// of the chart's Promotion guard webhooks, once it names the namespace. A
// webhook's own conditions (the abort webhook's) stay beside it.
func guardCondition(t *testing.T, ns string) admissionregistrationv1.MatchCondition {
	t.Helper()
	var cond admissionregistrationv1.MatchCondition
	require.Eventually(t, func() bool {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if env.Client.Get(context.Background(), client.ObjectKey{Name: fleetenv.PromotionGuardWebhookConfiguration}, vwc) != nil {
			return false
		}
		for _, w := range vwc.Webhooks {
			if !strings.HasSuffix(w.Name, targetguard.PromotionGuardWebhookSuffix) {
				return false
			}
			c, ok := fleetCondition(w.MatchConditions)
			if !ok || !strings.Contains(c.Expression, `"`+ns+`/fleet."`) {
				return false
			}
			cond = c
		}
		return true
	}, wait, tick, "the Promotion guard's match condition never named the fleet of %s", ns)
	return cond
}

// fleetCondition finds the controller's condition among a webhook's.
func fleetCondition(conds []admissionregistrationv1.MatchCondition) (admissionregistrationv1.MatchCondition, bool) {
	for _, c := range conds {
		if c.Name == render.PromotionGuardConditionName {
			return c, true
		}
	}
	return admissionregistrationv1.MatchCondition{}, false
}

// TestGuardDownStopsOnlyTheFleetsStages: while kargo-fleet is unreachable,
// the Promotions of a fleet Project's other Stages (its dev Stage) go on;
// the fleet's own Stages fail closed, with a message that says what
// happens and what to do. The routing label leaves the namespace with its
// last FleetStage.
func TestGuardDownStopsOnlyTheFleetsStages(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "guard-scope", fleetSpec{targets: inline("g", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}}})
	waitGuarded(t, f.ns)
	f.ensureFreight(f.good)
	testutil.Create(t, env.Client, testutil.MakeStage(f.ns, "dev").Steps(
		testutil.ArgoCDUpdateStep(`{"apps":[{"name":"guestbook-dev"}]}`)).Obj())
	cond := guardCondition(t, f.ns)

	// kargo-fleet down: the chart's Promotion webhooks, with the condition
	// the controller left on them, pointing where nothing answers.
	down, err := fleetenv.PromotionGuardWebhooks("kargo-fleet-scope-down", nil)
	require.NoError(t, err)
	nowhere := "https://127.0.0.1:1" + *down.Webhooks[0].ClientConfig.Service.Path
	for i := range down.Webhooks {
		down.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &nowhere}
		down.Webhooks[i].MatchConditions = append(down.Webhooks[i].MatchConditions, cond)
	}
	require.NoError(t, env.Client.Create(ctx, down))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), down) })

	var refusal error
	require.Eventually(t, func() bool {
		refusal = env.Client.Create(ctx, kargo.NewPromotion(f.ns, "fleet-all", f.good, nil, nil), client.DryRunAll)
		return refusal != nil && strings.Contains(refusal.Error(), "failed calling webhook")
	}, wait, tick, "kargo-fleet down: the fleet's wave Stage fails closed")
	for _, want := range []string{"kargo-fleet-is-unavailable", "promotions-into-fleet-stages-wait-until-it-is-back",
		"other-stages-are-not-affected", "install.md-outage-runbook"} {
		require.Contains(t, refusal.Error(), want, "the refusal says what happens and what to do")
	}
	for _, stage := range []string{render.TargetStageName("fleet", "g-00"), "prod"} {
		// The guard that is up refuses these first; the one that is down
		// is called as well.
		err := env.Client.Create(ctx, kargo.NewPromotion(f.ns, stage, f.good, nil, nil), client.DryRunAll)
		require.Error(t, err, "Stage %s is the fleet's", stage)
		require.Regexp(t, "failed calling webhook|denied the request: kargo-fleet", err.Error())
	}
	require.NoError(t, env.Client.Create(ctx, kargo.NewPromotion(f.ns, "dev", f.good, nil, nil)),
		"kargo-fleet down: the fleet Project's dev Stage promotes")
	if err := env.Client.Create(ctx, kargo.NewPromotion(f.ns, "fleetish", f.good, nil, nil), client.DryRunAll); err != nil {
		require.NotContains(t, err.Error(), "failed calling webhook", "a Stage whose name only starts like the fleet's is not the fleet's")
	}
	require.NoError(t, env.Client.Delete(ctx, down))

	// The last FleetStage goes: its Stages leave the condition, and the
	// namespace loses the routing label.
	require.NoError(t, env.Client.Delete(ctx, &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "fleet"}}))
	require.Eventually(t, func() bool {
		n := &corev1.Namespace{}
		return env.Client.Get(ctx, client.ObjectKey{Name: f.ns}, n) == nil && n.Labels[fleetv1alpha1.PromotionGuardLabel] == ""
	}, wait, tick, "the routing label leaves with the namespace's last FleetStage")
	require.Eventually(t, func() bool {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: fleetenv.PromotionGuardWebhookConfiguration}, vwc))
		c, ok := fleetCondition(vwc.Webhooks[0].MatchConditions)
		return ok && !strings.Contains(c.Expression, `"`+f.ns+`/`)
	}, wait, tick, "the fleet's Stages leave the condition")
}
