package targetguard

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestAppearsOrFinishes(t *testing.T) {
	t.Parallel()
	running := testutil.MakePromotion("shop", "prod", "f1").Phase(kargo.PromotionRunning).Obj()
	running.ResourceVersion = "1"
	pending := running.DeepCopy()
	pending.Status.Phase = kargo.PromotionPending
	step := running.DeepCopy()
	step.ResourceVersion, step.Status.CurrentStep = "2", 1
	done := running.DeepCopy()
	done.Status.Phase = kargo.PromotionSucceeded
	doneLater := done.DeepCopy()
	doneLater.ResourceVersion = "3"

	require.True(t, appearsOrFinishes.Create(event.CreateEvent{Object: pending}))
	require.False(t, appearsOrFinishes.Update(event.UpdateEvent{ObjectOld: pending, ObjectNew: running}), "it starts")
	require.False(t, appearsOrFinishes.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: step}), "a step's progress")
	require.True(t, appearsOrFinishes.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: done}), "the outcome")
	require.False(t, appearsOrFinishes.Update(event.UpdateEvent{ObjectOld: done, ObjectNew: doneLater}), "after the end")
}
