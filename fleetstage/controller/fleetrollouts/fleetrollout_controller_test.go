package fleetrollouts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	goodFreight = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	badFreight  = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fixture is a FleetRollout reconciler on a fake client: FleetStage
// shop/prod with waves pilot (eu-1) and canary (eu-2, us-1).
type fixture struct {
	r      *FleetRolloutReconciler
	c      client.Client
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	require.NoError(t, kargo.AddToScheme(s))
	return s
}

func newFixture(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&fleetv1alpha1.FleetRollout{}, &fleetv1alpha1.FleetStage{})
	for _, ix := range promotionIndexes {
		b = b.WithIndex(&kargo.Promotion{}, ix.name, ix.extract)
	}
	b = b.WithIndex(&kargo.Stage{}, stageTargetIndex, targetStageOf)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	f := &fixture{c: c, clock: clocktesting.NewFakeClock(t0), events: events.NewFakeRecorder(100)}
	f.r = NewFleetRolloutReconciler(c, c, nil, f.events, f.clock, nil)
	return f
}

func (f *fixture) reconcile(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	return f.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: name}})
}

func (f *fixture) rollout(t *testing.T, name string) *fleetv1alpha1.FleetRollout {
	t.Helper()
	ro := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: name}, ro))
	return ro
}

// drained returns the Events recorded so far.
func (f *fixture) drained() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func fleetStage() *fleetv1alpha1.FleetStage {
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Status.Waves = []fleetv1alpha1.WaveMembership{{Name: "pilot", Stage: "prod-pilot", Members: 1},
		{Name: "canary", Stage: "prod-canary", Members: 2}}
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: goodFreight}
	return fs
}

func forward(name, freight string, phase fleetv1alpha1.RolloutPhase, age time.Duration) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour).Add(age)),
			Labels:            map[string]string{fleetv1alpha1.FleetStageLabel: "prod"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: freight}, Intent: fleetv1alpha1.IntentRun},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase},
	}
}

func breach(ro *fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
		Status: metav1.ConditionTrue, Reason: string(plan.HaltWaveThreshold), Message: "2 of 2 failed"})
	return ro
}

func testPlan() *plan.WavePlan {
	return &plan.WavePlan{Hash: "0123456789abcdef", Waves: []plan.PlannedWave{
		{Name: "pilot", MaxConcurrent: 1, Members: []plan.Target{{ID: "eu-1", Name: "eu-1"}}},
		{Name: "canary", MaxConcurrent: 2, Members: []plan.Target{{ID: "eu-2", Name: "eu-2"}, {ID: "us-1", Name: "us-1"}}},
	}}
}

// snapshotOf is the plan snapshot ConfigMap of ro, controlled by it unless
// foreign.
func snapshotOf(t *testing.T, ro *fleetv1alpha1.FleetRollout, p *plan.WavePlan, foreign bool) *corev1.ConfigMap {
	t.Helper()
	raw, err := plan.EncodeSnapshot(p)
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fleetrollout.SnapshotName(ro.Name)},
		BinaryData: map[string][]byte{plan.SnapshotKey: raw}}
	if !foreign {
		controller := true
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetRollout",
			Name: ro.Name, UID: ro.UID, Controller: &controller}}
	}
	return cm
}

// targetStages are the Stages of the plan's three targets, on the good
// Freight.
func targetStages() []client.Object {
	var out []client.Object
	for _, id := range []string{"eu-1", "eu-2", "us-1"} {
		st := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod." + id, Labels: map[string]string{
			fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget, fleetv1alpha1.TargetLabel: id}}}
		st.Status.Health = &kargo.Health{Status: kargo.HealthHealthy}
		st.Status.FreightHistory = []kargo.FreightCollection{{ID: "a", Items: map[string]kargo.FreightReference{
			"Warehouse/apps": {Name: goodFreight, Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}}}}}
		out = append(out, st)
	}
	return out
}

func targetPromotion(ro, target string, phase kargo.PromotionPhase) *kargo.Promotion {
	p := kargo.NewPromotion("shop", "prod."+target, badFreight, map[string]string{
		fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RolloutLabel: ro, fleetv1alpha1.TargetLabel: target,
	}, nil)
	p.Name = "prod." + target + ".01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6"
	p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	p.Status.Phase = phase
	return p
}

func TestReconcile_missingObjects(t *testing.T) {
	t.Parallel()
	t.Run("a rollout that is gone is forgotten", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.r.snapshots.put("uid-gone", testPlan())
		f.r.remember(types.NamespacedName{Namespace: "shop", Name: "gone"}, "uid-gone")
		res, err := f.reconcile(t, "gone")
		require.NoError(t, err)
		require.Zero(t, res)
		require.Nil(t, f.r.snapshots.get("uid-gone"), "its snapshot is dropped")
	})
	t.Run("a rollout of a FleetStage that does not exist fails", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, "", 0)
		ro.Spec.FleetStage = "nowhere"
		f := newFixture(t, nil, ro)
		_, err := f.reconcile(t, "prod-bad")
		require.NoError(t, err)
		got := f.rollout(t, "prod-bad")
		require.Equal(t, fleetv1alpha1.RolloutFailed, got.Status.Phase)
		require.Equal(t, `FleetStage "nowhere" does not exist`, got.Status.Message)
		require.NotNil(t, got.Status.FinishedAt)
		require.Contains(t, f.drained(), `Warning RolloutFailed FleetStage "nowhere" does not exist`)
	})
	t.Run("reading the FleetStage fails: retried, nothing written", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*fleetv1alpha1.FleetStage); ok {
				return apierrors.NewServiceUnavailable("etcd is down")
			}
			return c.Get(ctx, key, obj, opts...)
		}}, fleetStage(), forward("prod-bad", badFreight, "", 0))
		_, err := f.reconcile(t, "prod-bad")
		require.ErrorContains(t, err, "etcd is down")
		require.Empty(t, f.rollout(t, "prod-bad").Status.Phase)
	})
}

func TestReconcile_snapshot(t *testing.T) {
	t.Parallel()
	t.Run("a ConfigMap the rollout does not control is not its plan", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, "", 0)
		f := newFixture(t, nil, fleetStage(), ro, snapshotOf(t, ro, testPlan(), true))
		_, err := f.reconcile(t, "prod-bad")
		require.NoError(t, err)
		got := f.rollout(t, "prod-bad")
		require.Equal(t, fleetv1alpha1.RolloutFailed, got.Status.Phase)
		require.Contains(t, got.Status.Message, "is not controlled by it")
	})
	t.Run("a rollout waits for its wave Stage Promotion on the plan it owns", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, "", 0)
		f := newFixture(t, nil, append(targetStages(), fleetStage(), ro, snapshotOf(t, ro, testPlan(), false))...)
		_, err := f.reconcile(t, "prod-bad")
		require.NoError(t, err)
		got := f.rollout(t, "prod-bad")
		require.Equal(t, fleetv1alpha1.RolloutPending, got.Status.Phase)
		require.Equal(t, int32(3), got.Status.Snapshot.Targets)
		require.Equal(t, "0123456789ab", got.Status.Snapshot.PlanHash)
	})
	t.Run("a rollback takes the targets the rolled-back rollout moved, in reverse wave order", func(t *testing.T) {
		t.Parallel()
		bad := breach(forward("prod-bad", badFreight, fleetv1alpha1.RolloutFailed, 0))
		rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: bad, Freight: fleetv1alpha1.FreightReference{Name: goodFreight}, Actor: "kubernetes:alice"})
		rb.UID, rb.CreationTimestamp = "uid-rb", metav1.NewTime(t0)
		f := newFixture(t, nil, append(targetStages(), fleetStage(), bad, rb, snapshotOf(t, bad, testPlan(), false),
			targetPromotion("prod-bad", "eu-1", kargo.PromotionSucceeded), targetPromotion("prod-bad", "us-1", kargo.PromotionFailed))...)
		_, err := f.reconcile(t, rb.Name)
		require.NoError(t, err)
		p := f.r.snapshots.get("uid-rb")
		require.NotNil(t, p)
		require.Equal(t, []string{"canary", "pilot"}, []string{p.Waves[0].Name, p.Waves[1].Name})
		require.Equal(t, []plan.Target{{ID: "us-1", Name: "us-1"}}, p.Waves[0].Members)
		got := f.rollout(t, rb.Name)
		require.Equal(t, fleetv1alpha1.RolloutRollingBack, got.Status.Phase)
		require.Equal(t, int32(2), got.Status.Snapshot.Targets)
	})
	t.Run("a rollback object PlanRollback refuses never runs", func(t *testing.T) {
		t.Parallel()
		other := forward("staging-bad", badFreight, fleetv1alpha1.RolloutFailed, 0)
		other.Spec.FleetStage, other.Labels = "staging", map[string]string{fleetv1alpha1.FleetStageLabel: "staging"}
		rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: other, Freight: fleetv1alpha1.FreightReference{Name: goodFreight}})
		rb.Name, rb.UID = "undo-staging", "uid-undo"
		rb.Spec.FleetStage, rb.Labels[fleetv1alpha1.FleetStageLabel] = "prod", "prod"
		f := newFixture(t, nil, fleetStage(), other, rb, snapshotOf(t, other, testPlan(), false))
		_, err := f.reconcile(t, "undo-staging")
		require.NoError(t, err)
		got := f.rollout(t, "undo-staging")
		require.Equal(t, fleetv1alpha1.RolloutFailed, got.Status.Phase)
		require.Equal(t, `rollback refused: FleetRollout "staging-bad" belongs to FleetStage "staging", not "prod"`, got.Status.Message)
		list := &configMapList{}
		require.NoError(t, f.c.List(t.Context(), &list.ConfigMapList))
		require.Len(t, list.Items, 1, "no plan snapshot taken")
	})
	t.Run("a rollback waits while the rolled-back rollout's last claimed batch lands", func(t *testing.T) {
		t.Parallel()
		bad := breach(forward("prod-bad", badFreight, fleetv1alpha1.RolloutFailed, 0))
		bad.Status.Dispatch = &fleetv1alpha1.Dispatch{Controller: "other", Keys: []string{"eu-1", "eu-2"}, At: metav1.NewTime(t0.Add(-time.Second))}
		rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: bad, Freight: fleetv1alpha1.FreightReference{Name: goodFreight}})
		rb.UID = "uid-rb"
		f := newFixture(t, nil, fleetStage(), bad, rb, snapshotOf(t, bad, testPlan(), false),
			targetPromotion("prod-bad", "eu-1", kargo.PromotionSucceeded))
		res, err := f.reconcile(t, rb.Name)
		require.NoError(t, err)
		require.Equal(t, claimRetry, res.RequeueAfter)
		require.Nil(t, f.r.snapshots.get("uid-rb"))
		f.clock.Step(claimWindow)
		_, err = f.reconcile(t, rb.Name)
		require.NoError(t, err)
		require.Equal(t, 1, f.r.snapshots.get("uid-rb").Members(), "after the claim window the plan freezes with what moved")
	})
	t.Run("a rollback does not wait for a batch of this controller that returned", func(t *testing.T) {
		t.Parallel()
		for _, landed := range []bool{true, false} {
			bad := breach(forward("prod-bad", badFreight, fleetv1alpha1.RolloutFailed, 0))
			bad.UID = "uid-bad"
			rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: bad, Freight: fleetv1alpha1.FreightReference{Name: goodFreight}})
			rb.UID = "uid-rb"
			f := newFixture(t, nil, fleetStage(), bad, rb, snapshotOf(t, bad, testPlan(), false),
				targetPromotion("prod-bad", "eu-1", kargo.PromotionSucceeded))
			// eu-2 was claimed but its create was dropped: a target failed
			// while the batch was being created.
			claim := &fleetv1alpha1.Dispatch{Controller: f.r.id, Keys: []string{"eu-1", "eu-2"},
				At: metav1.NewTime(t0.Add(-time.Second + 300*time.Millisecond))}
			stored := f.rollout(t, bad.Name)
			stored.Status.Dispatch = claim.DeepCopy()
			stored.Status.Dispatch.At = metav1.NewTime(claim.At.Truncate(time.Second)) // as the API server keeps it
			require.NoError(t, f.c.Status().Update(t.Context(), stored))
			if landed {
				f.r.landed.note(bad.UID, claim)
			}
			res, err := f.reconcile(t, rb.Name)
			require.NoError(t, err)
			if !landed {
				require.Equal(t, claimRetry, res.RequeueAfter, "a claim not known to have landed holds the plan back")
				require.Nil(t, f.r.snapshots.get("uid-rb"))
				continue
			}
			require.NotNil(t, f.r.snapshots.get("uid-rb"), "the plan is taken at once")
			require.Equal(t, 1, f.r.snapshots.get("uid-rb").Members())
		}
	})
}

// configMapList wraps the list so the test reads as what it counts.
type configMapList struct{ corev1.ConfigMapList }

func TestReconcile_automaticRollback(t *testing.T) {
	t.Parallel()
	const automatic, manual = fleetv1alpha1.RollbackAutomatic, fleetv1alpha1.RollbackManual
	tests := []struct {
		name       string
		mode       fleetv1alpha1.RollbackMode
		fs         func(*fleetv1alpha1.FleetStage)
		objs       []client.Object
		wantReason string
		wantFrom   string
	}{
		{name: "a breach under Automatic rolls back to the last good Freight", mode: automatic,
			wantReason: fleetv1alpha1.RollbackCreatedReason, wantFrom: goodFreight},
		{name: "Manual: nothing", mode: manual},
		{name: "no last good Freight", mode: automatic, fs: func(fs *fleetv1alpha1.FleetStage) { fs.Status.LastGoodFreight = nil },
			wantReason: string(rollout.RollbackNoLastGoodFreight)},
		{name: "the last good Freight is held back", mode: automatic,
			objs:       []client.Object{breach(forward("prod-good-again", goodFreight, fleetv1alpha1.RolloutFailed, -time.Minute))},
			wantReason: string(rollout.RollbackHeldBack)},
		{name: "an existing rollback is the rollback", mode: automatic,
			objs: []client.Object{func() client.Object {
				rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: forward("prod-bad", "", "", 0),
					Freight: fleetv1alpha1.FreightReference{Name: "c0ffee"}, Actor: "kubernetes:bob"})
				return rb
			}()},
			wantReason: fleetv1alpha1.RollbackCreatedReason, wantFrom: "c0ffee"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := fleetStage()
			fs.Spec.Policy.Rollback.Mode = tt.mode
			if tt.fs != nil {
				tt.fs(fs)
			}
			bad := breach(forward("prod-bad", badFreight, fleetv1alpha1.RolloutFailed, 0))
			f := newFixture(t, nil, append(tt.objs, fs, bad)...)
			_, err := f.reconcile(t, "prod-bad")
			require.NoError(t, err)
			c := meta.FindStatusCondition(f.rollout(t, "prod-bad").Status.Conditions, fleetv1alpha1.RollbackCondition)
			var rb *fleetv1alpha1.FleetRollout
			got := &fleetv1alpha1.FleetRollout{}
			if err := f.c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: fleetrollout.RollbackName("prod-bad")}, got); err == nil {
				rb = got
			} else {
				require.True(t, apierrors.IsNotFound(err), err)
			}
			if tt.wantReason == "" {
				require.Nil(t, c)
				require.Nil(t, rb)
				return
			}
			require.NotNil(t, c)
			require.Equal(t, tt.wantReason, c.Reason, c.Message)
			if tt.wantFrom == "" {
				require.Equal(t, metav1.ConditionFalse, c.Status)
				require.Nil(t, rb, "no rollback created")
				require.Contains(t, f.drained(), "Warning RollbackImpossible "+c.Message)
				return
			}
			require.NotNil(t, rb)
			require.Equal(t, tt.wantFrom, rb.Spec.Freight.Name)
			require.Contains(t, f.drained(), "Warning RollbackStarted Rolling back, as spec.policy.rollback.mode Automatic says: "+c.Message)
		})
	}
	t.Run("creating the rollback fails: retried, no condition recorded", func(t *testing.T) {
		t.Parallel()
		fs := fleetStage()
		fs.Spec.Policy.Rollback.Mode = automatic
		f := newFixture(t, &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*fleetv1alpha1.FleetRollout); ok {
				return apierrors.NewForbidden(schema.GroupResource{Group: "fleet.kargo-fleet.io", Resource: "fleetrollouts"}, "prod-bad-rb", errors.New("denied"))
			}
			return c.Create(ctx, obj, opts...)
		}}, fs, breach(forward("prod-bad", badFreight, fleetv1alpha1.RolloutFailed, 0)))
		_, err := f.reconcile(t, "prod-bad")
		require.ErrorContains(t, err, "denied")
		require.Nil(t, meta.FindStatusCondition(f.rollout(t, "prod-bad").Status.Conditions, fleetv1alpha1.RollbackCondition))
	})
}

func TestReconcile_newerFreight(t *testing.T) {
	t.Parallel()
	t.Run("Queue: a newer rollout waits behind the running one", func(t *testing.T) {
		t.Parallel()
		older := forward("prod-old", goodFreight, fleetv1alpha1.RolloutProgressing, 0)
		newer := forward("prod-new", badFreight, "", time.Minute)
		f := newFixture(t, nil, fleetStage(), older, newer)
		_, err := f.reconcile(t, "prod-new")
		require.NoError(t, err)
		got := f.rollout(t, "prod-new")
		require.Equal(t, fleetv1alpha1.RolloutPending, got.Status.Phase)
		require.Contains(t, got.Status.Message, "queued behind FleetRollout prod-old")
		require.Nil(t, got.Status.Snapshot, "a queued rollout takes no plan yet")
	})
	t.Run("Supersede: the older rollout gives way", func(t *testing.T) {
		t.Parallel()
		fs := fleetStage()
		fs.Spec.Policy.NewerFreight = fleetv1alpha1.SupersedeReplace
		older := forward("prod-old", goodFreight, fleetv1alpha1.RolloutProgressing, 0)
		newer := forward("prod-new", badFreight, "", time.Minute)
		f := newFixture(t, nil, fs, older, newer)
		_, err := f.reconcile(t, "prod-old")
		require.NoError(t, err)
		got := f.rollout(t, "prod-old")
		require.Equal(t, fleetv1alpha1.RolloutSuperseded, got.Status.Phase)
		require.Contains(t, got.Status.Message, "superseded by FleetRollout prod-new")
		require.Contains(t, f.drained(), "Normal RolloutSuperseded "+got.Status.Message)
	})
}

func TestStartTargets(t *testing.T) {
	t.Parallel()
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "kargo.akuity.io", Kind: "Promotion"}, "",
		field.ErrorList{field.Invalid(field.NewPath("spec", "freight"), badFreight, kargo.FreightNotAvailable)})
	tests := []struct {
		name            string
		err             error
		wantErr         string
		wantUnavailable int
		wantExpected    bool
		wantRefused     bool
	}{
		{name: "created", wantExpected: true},
		{name: "Freight not available yet: refused, looked at again", err: invalid, wantUnavailable: 1, wantRefused: true},
		{name: "a timeout: the Promotion may exist, so it stays expected", err: apierrors.NewTimeoutError("slow", 1),
			wantErr: "slow", wantExpected: true},
		{name: "a connection error: it may exist too", err: errors.New("connection reset by peer"), wantErr: "connection reset", wantExpected: true},
		{name: "forbidden: certainly not created", err: apierrors.NewForbidden(schema.GroupResource{Group: "kargo.akuity.io", Resource: "promotions"},
			"", errors.New("no promote verb")), wantErr: "no promote verb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if tt.err != nil {
					return tt.err
				}
				return c.Create(ctx, obj, opts...)
			}})
			ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
			n, skipped, err := f.r.startTargets(t.Context(), ro, fleetStage(), []rollout.Start{{Target: plan.Target{ID: "eu-1", Name: "eu-1"}, Wave: "pilot"}}, 0)
			require.Zero(t, skipped)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, `error creating Promotion of target "eu-1"`)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.wantUnavailable, n)
			require.Equal(t, tt.wantExpected, f.r.expected.isExpected(ro.UID, "eu-1", t0))
			_, refused := f.r.refused.all(ro.UID)["eu-1"]
			require.Equal(t, tt.wantRefused, refused)
			if tt.err == nil {
				list := &kargo.PromotionList{}
				require.NoError(t, f.c.List(t.Context(), list))
				require.Len(t, list.Items, 1)
				require.Equal(t, map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RolloutLabel: "prod-bad",
					fleetv1alpha1.WaveLabel: "pilot", fleetv1alpha1.TargetLabel: "eu-1"}, list.Items[0].Labels)
				require.Equal(t, "prod.eu-1", list.Items[0].Spec.Stage)
			}
		})
	}
}

func TestPromoteWave(t *testing.T) {
	t.Parallel()
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "kargo.akuity.io", Kind: "Promotion"}, "",
		field.ErrorList{field.Invalid(field.NewPath("spec", "freight"), badFreight, kargo.FreightNotAvailable)})
	f := newFixture(t, &interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
		return invalid
	}})
	ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	unavailable, err := f.r.promoteWave(t.Context(), ro, fleetStage(), "canary")
	require.NoError(t, err)
	require.True(t, unavailable, "Kargo marks the Freight verified upstream a moment after: look again")
	require.False(t, f.r.expected.isExpected(ro.UID, rollout.WaveKey("canary"), t0))

	ok := newFixture(t, nil)
	unavailable, err = ok.r.promoteWave(t.Context(), ro, fleetStage(), "canary")
	require.NoError(t, err)
	require.False(t, unavailable)
	require.True(t, ok.r.expected.isExpected(ro.UID, rollout.WaveKey("canary"), t0))
	list := &kargo.PromotionList{}
	require.NoError(t, ok.c.List(t.Context(), list))
	require.Len(t, list.Items, 1)
	require.Equal(t, "prod-canary", list.Items[0].Spec.Stage)
	require.Equal(t, "prod-bad", list.Items[0].Labels[fleetv1alpha1.WavePromotionLabel])
	require.Contains(t, ok.drained(), "Normal WavePromoted Promoted Freight "+badFreight+" into wave Stage prod-canary: the previous wave passed and soaked")
}

func TestClaim(t *testing.T) {
	t.Parallel()
	starts := []rollout.Start{{Target: plan.Target{ID: "eu-2"}, Wave: "canary"}, {Target: plan.Target{ID: "us-1"}, Wave: "canary"}}
	t.Run("claims the batch in status.dispatch", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		f := newFixture(t, nil, ro)
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		b, wait, err := f.r.claim(t.Context(), s, batch{starts: starts})
		require.NoError(t, err)
		require.Zero(t, wait)
		require.Len(t, b.starts, 2)
		d := f.rollout(t, "prod-bad").Status.Dispatch
		require.Equal(t, []string{"eu-2", "us-1"}, d.Keys)
		require.Equal(t, f.r.id, d.Controller)
		require.Equal(t, d, s.status.Dispatch, "the final status write keeps the claim")
	})
	t.Run("drops Promotions that exist already", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		// The batch that created eu-2's Promotion was claimed.
		ro.Status.Dispatch = &fleetv1alpha1.Dispatch{Controller: "elsewhere/abc", Keys: []string{"eu-2"}, At: metav1.NewTime(t0.Add(-time.Minute))}
		f := newFixture(t, nil, ro, targetPromotion("prod-bad", "eu-2", kargo.PromotionRunning))
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		b, _, err := f.r.claim(t.Context(), s, batch{starts: starts})
		require.NoError(t, err)
		require.Equal(t, []rollout.Start{starts[1]}, b.starts)
	})
	t.Run("a rollout's first claim reads no target back: none can exist", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		listed := 0
		f := newFixture(t, &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if _, ok := l.(*metav1.PartialObjectMetadataList); ok {
				listed++
			}
			return c.List(ctx, l, opts...)
		}}, ro)
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		b, _, err := f.r.claim(t.Context(), s, batch{starts: starts})
		require.NoError(t, err)
		require.Equal(t, starts, b.starts)
		require.Zero(t, listed)
		require.NotNil(t, f.rollout(t, "prod-bad").Status.Dispatch, "the claim is written all the same")

		// The next batch reads its targets back.
		s = &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		_, _, err = f.r.claim(t.Context(), s, batch{starts: []rollout.Start{{Target: plan.Target{ID: "us-2"}, Wave: "canary"}}})
		require.NoError(t, err)
		require.Equal(t, 1, listed)
	})
	t.Run("another controller's fresh claim whose Promotions are not all there holds it back", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		ro.Status.Dispatch = &fleetv1alpha1.Dispatch{Controller: "elsewhere/abc", Keys: []string{"eu-1"}, At: metav1.NewTime(t0.Add(-time.Second))}
		f := newFixture(t, nil, ro)
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		b, wait, err := f.r.claim(t.Context(), s, batch{starts: starts})
		require.NoError(t, err)
		require.True(t, b.empty())
		require.Equal(t, claimRetry, wait)
	})
	t.Run("a lost claim creates nothing and looks again at once", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		f := newFixture(t, &interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "fleet.kargo-fleet.io", Resource: "fleetrollouts"}, "prod-bad", errors.New("changed"))
		}}, ro)
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		b, wait, err := f.r.claim(t.Context(), s, batch{starts: starts, wave: "general"})
		require.NoError(t, err)
		require.True(t, b.empty())
		require.Equal(t, conflictRetry, wait)
	})
	t.Run("any other error writing the claim is returned", func(t *testing.T) {
		t.Parallel()
		ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
		f := newFixture(t, &interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewServiceUnavailable("try later")
		}}, ro)
		s := &scope{ro: f.rollout(t, "prod-bad"), fs: fleetStage(), status: ro.Status.DeepCopy()}
		_, _, err := f.r.claim(t.Context(), s, batch{starts: starts})
		require.ErrorContains(t, err, `error claiming Promotions of FleetRollout "prod-bad": try later`)
	})
}

func TestWriteStatus(t *testing.T) {
	t.Parallel()
	ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	ro.Status.Snapshot = &fleetv1alpha1.PlanSnapshot{PlanHash: "abc"}
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveProgressing, Total: 1, InFlight: 1}}
	f := newFixture(t, nil, ro)
	current := f.rollout(t, "prod-bad")

	progress := current.Status.DeepCopy()
	progress.Waves[0].InFlight, progress.Waves[0].Succeeded = 0, 1
	written, err := f.r.writeStatus(t.Context(), &scope{ro: current, status: progress})
	require.NoError(t, err)
	require.True(t, written, "the first write of a rollout is not held back")
	current = f.rollout(t, "prod-bad")

	more := current.Status.DeepCopy()
	more.Waves[0].Total = 2
	written, err = f.r.writeStatus(t.Context(), &scope{ro: current, status: more})
	require.NoError(t, err)
	require.False(t, written, "a change of counts only within statusInterval waits")
	require.Equal(t, int32(1), f.rollout(t, "prod-bad").Status.Waves[0].Total)

	phase := more.DeepCopy()
	phase.Waves[0].Phase = fleetv1alpha1.WaveSucceeded
	written, err = f.r.writeStatus(t.Context(), &scope{ro: current, status: phase})
	require.NoError(t, err)
	require.True(t, written, "a change of a wave's phase is written at once")
	require.Equal(t, fleetv1alpha1.WaveSucceeded, f.rollout(t, "prod-bad").Status.Waves[0].Phase)

	current = f.rollout(t, "prod-bad")
	f.clock.Step(statusInterval)
	started := current.Status.DeepCopy()
	started.Waves[0].InFlight = 1
	s := &scope{ro: current, status: started}
	written, err = f.r.writeStatus(t.Context(), s)
	require.NoError(t, err)
	require.False(t, written, "no target finished: the start waits to be written with more")
	require.Equal(t, rollout.ProgressWriteMaxWait-statusInterval, s.writeRetry)

	later := current.Status.DeepCopy()
	later.Waves[0].Succeeded = 2
	written, err = f.r.writeStatus(t.Context(), &scope{ro: current, status: later})
	require.NoError(t, err)
	require.True(t, written, "after statusInterval a finished target is written")

	current = f.rollout(t, "prod-bad")
	f.clock.Step(rollout.ProgressWriteMaxWait)
	idle := current.Status.DeepCopy()
	idle.Waves[0].InFlight = 0
	written, err = f.r.writeStatus(t.Context(), &scope{ro: current, status: idle})
	require.NoError(t, err)
	require.True(t, written, "after the longest wait any change is written")
}

func TestRecordOnFleetStage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		ro           *fleetv1alpha1.FleetRollout
		last         string
		objs         []client.Object
		wantCurrent  string
		wantLast     string
		wantLastGood string
	}{
		{name: "an unfinished rollout is current", ro: forward("prod-new", badFreight, fleetv1alpha1.RolloutProgressing, 0),
			wantCurrent: "prod-new", wantLastGood: goodFreight},
		{name: "a succeeded rollout becomes the last one and its Freight the last good one",
			ro: forward("prod-new", badFreight, fleetv1alpha1.RolloutSucceeded, 0), wantLast: "prod-new", wantLastGood: badFreight},
		{name: "a failed rollout is the last one and leaves the last good Freight",
			ro: forward("prod-new", badFreight, fleetv1alpha1.RolloutFailed, 0), wantLast: "prod-new", wantLastGood: goodFreight},
		{name: "an older rollout finishing later does not go back",
			ro: forward("prod-old", badFreight, fleetv1alpha1.RolloutSucceeded, 0), last: "prod-newer",
			objs:     []client.Object{forward("prod-newer", goodFreight, fleetv1alpha1.RolloutSucceeded, time.Minute)},
			wantLast: "prod-newer", wantLastGood: goodFreight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := fleetStage()
			fs.Status.LastRollout = tt.last
			f := newFixture(t, nil, append(tt.objs, fs)...)
			cached := &fleetv1alpha1.FleetStage{}
			require.NoError(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(fs), cached))
			_, err := f.r.recordOnFleetStage(t.Context(), tt.ro, cached)
			require.NoError(t, err)
			got := &fleetv1alpha1.FleetStage{}
			require.NoError(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(fs), got))
			require.Equal(t, tt.wantCurrent, got.Status.CurrentRollout)
			require.Equal(t, tt.wantLast, got.Status.LastRollout)
			require.Equal(t, tt.wantLastGood, got.Status.LastGoodFreight.Name)
		})
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if obj.GetName() == "refused" {
			return apierrors.NewForbidden(schema.GroupResource{Group: "kargo.akuity.io", Resource: "promotions"}, "refused", errors.New("no promote verb"))
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}, targetPromotion("prod-bad", "eu-1", kargo.PromotionRunning))
	ro := forward("prod-bad", badFreight, fleetv1alpha1.RolloutHalted, 0)
	err := f.r.abort(t.Context(), ro, []string{"prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6", "gone", "refused"})
	require.ErrorContains(t, err, `error aborting Promotion "refused"`)
	require.NotContains(t, err.Error(), "gone", "a Promotion that is gone needs no abort")
	p := &kargo.Promotion{}
	require.NoError(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "prod.eu-1.01jdx3m5n6p7q8r9s0t1v2w3x4.9f8e7d6"}, p))
	require.Equal(t, kargo.AbortTerminate, p.Annotations[kargo.AbortAnnotation])
	require.Contains(t, f.drained()[0], "Normal PromotionsAborted Asked Kargo to abort 3 target Promotion(s)")
}

// Test_setFinal_boundsMessage keeps a final message within the CRD's 1024
// characters: it may quote object names and errors.
func Test_setFinal_boundsMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := &scope{status: &fleetv1alpha1.FleetRolloutStatus{}}
	f.r.setFinal(s, fleetv1alpha1.RolloutFailed, "rollback refused: "+strings.Repeat("é", 1000))
	require.LessOrEqual(t, len(s.status.Message), 1024)
	require.True(t, strings.HasPrefix(s.status.Message, "rollback refused: é"))
	require.True(t, strings.HasSuffix(s.status.Message, "..."))
}
