//go:build integration

package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

// refusalsOn lists what Kargo's Events page shows of the admission guard's
// refusals on a Stage.
func refusalsOn(t *testing.T, ns, stage string) []corev1.Event {
	t.Helper()
	list, err := kargosim.ListProjectEvents(context.Background(), env.Client, ns)
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range list {
		if e.InvolvedObject.Kind == "Stage" && e.InvolvedObject.Name == stage && e.Reason == fswebhook.PromotionRefusedReason {
			out = append(out, e)
		}
	}
	return out
}

// TestRefusedPromotionIsOnKargoEventsPage: Promote on a target tile in the
// Kargo UI (Kargo's API server creates the Promotion for the person) is
// refused at admission, and the refusal shows on Kargo's Events page, on
// that target Stage, with the refusal's message and who asked. Clicking
// Promote 50 times makes one Event whose count goes up, and the writes stop
// at the correlator's burst of 25.
func TestRefusedPromotionIsOnKargoEventsPage(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "refusal-events", fleetSpec{targets: inline("r", 3, nil, nil), waves: driftWaves()})
	waitGuarded(t, f.ns)
	api := kargoAPI(t)
	alice, _ := kargoPromoter(t, f.ns, "alice-"+f.ns)
	f.ensureFreight(f.good)
	stage := targetStageOf(t, f, "pilot")

	_, err := api.ApproveAndPromote(ctx, alice, f.ns, stage, f.good)
	require.ErrorContains(t, err, `is a target of fleet "fleet"`)
	e := f.kargoEvent("Stage", stage, fswebhook.PromotionRefusedReason, "kubernetes:"+alice.Username)
	require.Equal(t, corev1.EventTypeWarning, e.Type)
	require.Contains(t, e.Message, "Freight "+f.good)
	require.Contains(t, e.Message, "through "+kargosim.APIServerUser, "the requesting user is named beside the person")
	require.Contains(t, e.Message, `is a target of fleet "fleet"`, "the Event says what the refusal said")
	require.Contains(t, e.Message, "kargo promote --project "+f.ns, "and the way that works")
	require.Equal(t, f.ns, e.Annotations[kargo.EventProjectAnnotation])
	require.Equal(t, stage, e.Annotations[kargo.EventStageAnnotation])
	require.Equal(t, fswebhook.PromotionRefusedReason, e.Reason)
	require.Equal(t, fswebhook.PromotionGuardComponent, e.Source.Component)

	for range 49 {
		_, err := api.PromoteToStage(ctx, alice, f.ns, stage, f.good)
		require.ErrorContains(t, err, `is a target of fleet "fleet"`)
	}
	require.Eventually(t, func() bool {
		got := refusalsOn(t, f.ns, stage)
		return len(got) == 1 && got[0].Count == 25
	}, wait, tick, "50 refusals make one Event, counted up to the correlator's burst of 25")
	time.Sleep(2 * time.Second)
	got := refusalsOn(t, f.ns, stage)
	require.Len(t, got, 1)
	require.EqualValues(t, 25, got[0].Count, "refusals past the burst are not written")
}
