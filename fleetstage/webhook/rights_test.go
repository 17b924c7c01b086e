package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestFleetRolloutValidator_rollbacks(t *testing.T) {
	t.Parallel()
	promoteBoth := fakeAccess{"alice promote stages prod-pilot": true, "alice promote stages prod-rest": true}
	fs := prodFleet()
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "good"}
	forward := func(name, fleetStage, freight string, phase fleetv1alpha1.RolloutPhase, breached bool) *fleetv1alpha1.FleetRollout {
		ro := fleetrollout.NewForward(fleetrollout.Forward{Namespace: "shop", FleetStage: fleetStage,
			Freight: fleetv1alpha1.FreightReference{Name: freight}, Promotion: name})
		ro.Name, ro.Status.Phase = name, phase
		if breached {
			ro.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition, Status: metav1.ConditionTrue,
				Reason: "Breached", LastTransitionTime: metav1.Now()}}
		}
		return ro
	}
	bad := forward("bad", "prod", "bad", fleetv1alpha1.RolloutFailed, true)
	older := forward("older", "prod", "older", fleetv1alpha1.RolloutSucceeded, false)
	other := forward("other", "staging", "x", fleetv1alpha1.RolloutFailed, false)
	otherFleet := testutil.MakeFleetStage("shop", "staging").Obj()
	rollbackOf := func(of *fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
		rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: freight},
			Actor: "kubernetes:alice"})
		rb.Spec.FleetStage = "prod"
		return rb
	}
	existingRollback := rollbackOf(bad, "good")
	tests := []struct {
		name    string
		user    string
		ro      *fleetv1alpha1.FleetRollout
		wantErr string
	}{
		{name: "to the last good Freight", user: "alice", ro: rollbackOf(bad, "good")},
		{name: "to Freight a rollout of the fleet passed", user: "alice", ro: rollbackOf(bad, "older")},
		{name: "another FleetStage's rollout", user: "alice", ro: rollbackOf(other, "good"),
			wantErr: `spec.rollbackOf: Invalid value: "other": FleetRollout "other" belongs to FleetStage "staging", not "prod"`},
		{name: "not even the controller rolls back another fleet's rollout", user: testController, ro: rollbackOf(other, "good"),
			wantErr: `belongs to FleetStage "staging", not "prod"`},
		{name: "a rollback of a rollback", user: "alice", ro: rollbackOf(existingRollback, "good"),
			wantErr: `spec.rollbackOf: Invalid value: "bad-rb": FleetRollout "bad-rb" is itself a rollback`},
		{name: "a rollout that does not exist", user: "alice", ro: rollbackOf(forward("gone", "prod", "x", "", false), "good"),
			wantErr: `spec.rollbackOf: Not found: "gone"`},
		{name: "held-back Freight", user: "alice", ro: rollbackOf(older, "bad"),
			wantErr: `spec.freight.name: Forbidden: Freight bad is held back from FleetStage "prod" after FleetRollout bad breached`},
		{name: "Freight that never passed the fleet", user: "alice", ro: rollbackOf(bad, "never"),
			wantErr: `spec.freight.name: Forbidden: Freight never has not passed FleetStage "prod"`},
		{name: "the step server asks for any Freight (anyFreight)", user: testController, ro: rollbackOf(bad, "never")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testClient(t, fs.DeepCopy(), otherFleet.DeepCopy(), bad.DeepCopy(), older.DeepCopy(), other.DeepCopy(), existingRollback.DeepCopy())
			v := NewFleetRolloutValidator(c, promoteBoth, testController)
			_, err := v.ValidateCreate(asUser(tt.user), tt.ro)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("rollbackOf never changes", func(t *testing.T) {
		t.Parallel()
		v := NewFleetRolloutValidator(testClient(t, fs.DeepCopy()), promoteBoth, testController)
		changed := existingRollback.DeepCopy()
		changed.Spec.RollbackOf = "older"
		for _, user := range []string{"alice", testController} {
			_, err := v.ValidateUpdate(asUser(user), existingRollback, changed)
			require.ErrorContains(t, err, "spec.rollbackOf: Forbidden: may not change after creation", user)
		}
	})
}

func TestFleetRolloutValidator_ValidateDelete(t *testing.T) {
	t.Parallel()
	v := NewFleetRolloutValidator(testClient(t, prodFleet()),
		fakeAccess{"alice promote stages prod-pilot": true, "alice promote stages prod-rest": true}, testController)
	running := rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Status.Phase = fleetv1alpha1.RolloutProgressing })
	_, err := v.ValidateDelete(asUser("mallory"), running)
	require.ErrorContains(t, err, `user "mallory" may not delete FleetRollout "r1" while it is Progressing: deleting a running rollout aborts it`)
	for _, user := range []string{"alice", testController, "system:serviceaccount:kube-system:namespace-controller"} {
		_, err = v.ValidateDelete(asUser(user), running)
		require.NoError(t, err, user)
	}
	finished := rollout(func(ro *fleetv1alpha1.FleetRollout) { ro.Status.Phase = fleetv1alpha1.RolloutSucceeded })
	_, err = v.ValidateDelete(asUser("mallory"), finished)
	require.NoError(t, err, "a finished rollout is only a record")
}

func TestFleetStageValidator_stageRights(t *testing.T) {
	t.Parallel()
	downstream := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-dr"},
		Spec: kargo.StageSpec{RequestedFreight: []kargo.FreightRequest{{Sources: kargo.FreightSources{Stages: []string{"prod"}}}}}}
	unrelated := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "qa"},
		Spec: kargo.StageSpec{RequestedFreight: []kargo.FreightRequest{{Sources: kargo.FreightSources{Direct: true}}}}}
	writer := fakeAccess{"alice create stages ": true, "alice update stages ": true}
	tests := []struct {
		name    string
		access  fakeAccess
		fs      *fleetv1alpha1.FleetStage
		wantErr []string
	}{
		{name: "may write Stages, the adopted one and the one downstream",
			access: merge(writer, fakeAccess{"alice update stages prod": true, "alice update stages prod-dr": true}),
			fs:     testutil.MakeFleetStage("shop", "fleet").FromStage("prod").Obj()},
		{name: "FleetStage rights only", access: fakeAccess{},
			fs: testutil.MakeFleetStage("shop", "fleet").FromStage("prod").Obj(),
			wantErr: []string{`spec: Forbidden: user "alice" may not create and update stages.kargo.akuity.io in namespace "shop"`,
				`spec.stage.fromStage: Forbidden: user "alice" may not update Stage "prod": adopting a Stage`,
				`spec.stage.fromStage: Forbidden: user "alice" may not update Stage "prod-dr", which takes Freight from "prod"`}},
		{name: "may not re-point the downstream Stage", access: merge(writer, fakeAccess{"alice update stages prod": true}),
			fs:      testutil.MakeFleetStage("shop", "fleet").FromStage("prod").Obj(),
			wantErr: []string{`may not update Stage "prod-dr", which takes Freight from "prod"`}},
		{name: "an inline template needs the Project's Stage rights only", access: writer,
			fs: testutil.MakeFleetStage("shop", "fleet").InlineStage("w", `{"spec":{"steps":[{"uses":"argocd-update"}]}}`).Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := NewFleetStageValidator(testClient(t, downstream.DeepCopy(), unrelated.DeepCopy()), tt.access, inventory.DefaultNamespacePolicy())
			_, err := v.ValidateCreate(asUser("alice"), tt.fs)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
		})
	}
}

func merge(sets ...fakeAccess) fakeAccess {
	out := fakeAccess{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

func TestValidate_inlineSecrets(t *testing.T) {
	t.Parallel()
	inline := func(template string, mutate func(*fleetv1alpha1.InlineStageSpec)) *fleetv1alpha1.FleetStage {
		fs := testutil.MakeFleetStage("shop", "fleet").InlineStage("w", template).Obj()
		if mutate != nil {
			mutate(fs.Spec.Stage.Inline)
		}
		return fs
	}
	tests := []struct {
		name    string
		fs      *fleetv1alpha1.FleetStage
		wantErr string
	}{
		{name: "expressions without Secrets", fs: inline(`{"spec":{"steps":[{"uses":"http","config":{"url":"${{ vars.server }}"}}]}}`, nil)},
		{name: "secret() in a step config",
			fs:      inline(`{"spec":{"steps":[{"uses":"http","config":{"headers":[{"name":"x","value":"${{ secret('db').password }}"}]}}]}}`, nil),
			wantErr: `spec.stage.inline.promotionTemplate: Invalid value: "${{ secret('db').password }}": an inline template may not read Secrets`},
		{name: "escaped in JSON, spaced, and upper case",
			fs:      inline(`{"spec":{"steps":[{"uses":"http","config":{"body":"${{ quote(SECRET \u0028'db').password) }}"}}]}}`, nil),
			wantErr: "spec.stage.inline.promotionTemplate: Invalid value"},
		{name: "sharedSecret()", fs: inline(`{"spec":{"steps":[{"uses":"http","as":"${{ sharedSecret('x').k }}"}]}}`, nil),
			wantErr: "an inline template may not read Secrets"},
		{name: "secret() in verification", fs: inline(`{"spec":{"steps":[{"uses":"http"}]}}`, func(in *fleetv1alpha1.InlineStageSpec) {
			in.Verification = &runtime.RawExtension{Raw: []byte(`{"args":[{"name":"t","value":"${{ secret('t').v }}"}]}`)}
		}), wantErr: "spec.stage.inline.verification: Invalid value"},
		{name: "secret() in a Stage variable", fs: inline(`{"spec":{"steps":[{"uses":"http"}]}}`, func(in *fleetv1alpha1.InlineStageSpec) {
			in.Vars = []fleetv1alpha1.Var{{Name: "token", Value: "${{ secret('db').password }}"}}
		}), wantErr: "spec.stage.inline.vars[0].value: Invalid value"},
		{name: "the word outside any expression", fs: inline(`{"spec":{"steps":[{"uses":"http","as":"rotate-secret(s)"}]}}`, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.fs)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
