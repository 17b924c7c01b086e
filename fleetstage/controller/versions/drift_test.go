package versions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func targetStage(name, freight string) *kargo.Stage {
	return testutil.MakeStage("shop", "prod-"+name).Target("prod", "", name).Current(freight).Obj()
}

func TestReconcile_drift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		policy      fleetv1alpha1.DriftPolicy
		windows     []fleetv1alpha1.ChangeWindow
		wantReverts int
		wantEvents  int
	}{
		{name: "Report: status, condition and Event, no Promotion", policy: fleetv1alpha1.DriftReport, wantEvents: 1},
		{name: "Revert: one revert Promotion and its Event", policy: fleetv1alpha1.DriftRevert, wantReverts: 1, wantEvents: 2},
		{name: "Revert waits for a closed window", policy: fleetv1alpha1.DriftRevert, wantEvents: 1,
			windows: []fleetv1alpha1.ChangeWindow{{Name: "never", Type: fleetv1alpha1.WindowDeny, Schedule: "* * * * *",
				Duration: metav1.Duration{Duration: 2 * time.Minute}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fs := testutil.MakeFleetStage("shop", "prod").Obj()
			fs.Spec.Policy.Drift = tt.policy
			fs.Spec.Policy.Windows = tt.windows
			fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
			stA, stB, stC := targetStage("a", "good"), targetStage("b", "manual"), targetStage("c", "good")
			record := testutil.RecordStages(fs, stA, stB, stC)
			// Labelled for the fleet but never recorded by it: neither
			// counted nor reverted.
			forged := targetStage("d", "manual")
			c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).
				WithObjects(fs, record, stA, stB, stC, forged).
				WithStatusSubresource(&fleetv1alpha1.FleetStage{}).Build()
			rec := events.NewFakeRecorder(10)
			r := NewReconciler(c, clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)), rec)
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fs)}

			for range 2 { // the second pass announces and reverts nothing new
				_, err := r.Reconcile(ctx, req)
				require.NoError(t, err)
				r.writes.forget(req.NamespacedName)
			}

			got := &fleetv1alpha1.FleetStage{}
			require.NoError(t, c.Get(ctx, req.NamespacedName, got))
			require.Equal(t, &fleetv1alpha1.DriftStatus{Count: 1, Examples: []fleetv1alpha1.DriftedTarget{
				{Target: "b", Stage: "prod-b", Freight: "manual", IntendedFreight: "good"}}}, got.Status.Drift)
			require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.DriftedCondition))
			promotions := &kargo.PromotionList{}
			require.NoError(t, c.List(ctx, promotions, client.HasLabels{fleetv1alpha1.RevertLabel}))
			require.Len(t, promotions.Items, tt.wantReverts)
			for _, p := range promotions.Items {
				require.Equal(t, "prod-b", p.Spec.Stage)
				require.Equal(t, "good", p.Spec.Freight)
				require.Equal(t, "true", p.Annotations[kargo.RollbackAnnotation])
			}
			require.Len(t, rec.Events, tt.wantEvents)
		})
	}
}

// TestRevertRefusedAtAdmission: a revert the API server refuses (a
// FreightPolicy keeps the intended Freight off the target) is reported once
// as a Warning and not asked again, and fails nothing.
func TestRevertRefusedAtAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Policy.Drift = fleetv1alpha1.DriftRevert
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
	stA, stB := targetStage("a", "manual"), targetStage("b", "manual")
	creates := 0
	c := fake.NewClientBuilder().WithScheme(envtest.NewScheme()).
		WithObjects(fs, testutil.RecordStages(fs, stA, stB), stA, stB).
		WithStatusSubresource(&fleetv1alpha1.FleetStage{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if p, ok := o.(*kargo.Promotion); ok {
				creates++
				if p.Spec.Stage == "prod-a" {
					return apierrors.NewForbidden(schema.GroupResource{Group: "kargo.akuity.io", Resource: "promotions"}, "",
						errors.New(`admission webhook denied the request: kargo-fleet: Freight good may not run on target Stage "prod-a"`))
				}
			}
			return c.Create(ctx, o, opts...)
		}}).Build()
	rec := events.NewFakeRecorder(10)
	r := NewReconciler(c, clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)), rec)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	for range 2 {
		_, err := r.Reconcile(ctx, req)
		require.NoError(t, err)
		r.writes.forget(req.NamespacedName)
	}
	require.Equal(t, 2, creates, "each drifted target asked once: the refusal is not retried, and b is reverted")
	promotions := &kargo.PromotionList{}
	require.NoError(t, c.List(ctx, promotions, client.HasLabels{fleetv1alpha1.RevertLabel}))
	require.Len(t, promotions.Items, 1)
	require.Equal(t, "prod-b", promotions.Items[0].Spec.Stage)
	refused := 0
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, DriftRevertRefusedReason) && strings.Contains(e, "may not run on target Stage") {
			refused++
		}
	}
	require.Equal(t, 1, refused)
}

func TestDriftMemoryPartialObservation(t *testing.T) {
	t.Parallel()
	var m driftMemory
	key := types.NamespacedName{Namespace: "shop", Name: "prod"}
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	stageDrift := drift.Drift{Target: "a", Stage: "prod.a", Freight: "old", Intended: "new"}
	appDrift := drift.Drift{Target: "b", Stage: "prod.b", Freight: "new", Intended: "new", Application: "k1"}
	fresh, cleared, _ := m.observe(key, []drift.Drift{stageDrift, appDrift}, at, false)
	require.Len(t, fresh, 2)
	require.Empty(t, cleared)
	// The Applications could not be read: the Application's drift has not
	// ended, so no revert is made again once it is seen again.
	_, cleared, _ = m.observe(key, []drift.Drift{stageDrift}, at.Add(time.Second), true)
	require.Empty(t, cleared)
	fresh, cleared, _ = m.observe(key, []drift.Drift{stageDrift, appDrift}, at.Add(2*time.Second), false)
	require.Empty(t, fresh, "nothing new")
	require.Empty(t, cleared)
	// Read again, the Application's drift is gone: it ended.
	_, cleared, _ = m.observe(key, []drift.Drift{stageDrift}, at.Add(3*time.Second), false)
	require.Equal(t, map[string]time.Time{appDrift.Key(): at.Add(3 * time.Second)}, cleared)
}
