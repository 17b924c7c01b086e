//go:build integration

package fleetstage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// kargoViewerRules are the read rights of Kargo's kargo-viewer role: no
// promote, no writes.
var kargoViewerRules = []rbacv1.PolicyRule{{
	APIGroups: []string{"kargo.akuity.io"},
	Resources: []string{"stages", "promotions", "freights", "warehouses", "projectconfigs"},
	Verbs:     []string{"get", "list", "watch"},
}}

var (
	chartRolesOnce sync.Once
	chartRolesErr  error
)

// bindChartRole binds user in ns to the ClusterRole the Helm chart renders
// with the name suffix (e.g. "-fleet-operator"), installing the chart's
// ClusterRoles first. The chart aggregates the operator role into
// Kubernetes' edit role; envtest runs no aggregation controller, so the
// test binds it directly.
func bindChartRole(t *testing.T, ns, user, suffix string) {
	t.Helper()
	ctx := context.Background()
	objs, err := helmchart.Render(helmchart.Release{Name: "kargo-fleet", Namespace: "kargo-fleet"})
	require.NoError(t, err)
	chartRolesOnce.Do(func() {
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" {
				continue
			}
			if err := env.Client.Create(ctx, o.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				chartRolesErr = err
			}
		}
	})
	require.NoError(t, chartRolesErr)
	role := helmchart.Find(objs, "ClusterRole", suffix)
	require.NotNil(t, role, "the chart renders a ClusterRole *%s", suffix)
	name := fmt.Sprintf("%s%s-%d", strings.ReplaceAll(user, ":", "-"), suffix, time.Now().UnixNano())
	require.NoError(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.GetName()},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

// promoteOn returns the rule granting Kargo's promote verb on the named
// Stages.
func promoteOn(stages ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"},
		ResourceNames: stages, Verbs: []string{"promote"}}
}

// setIntent patches spec.intent as `kargo-fleet pause|resume|abort` does.
func setIntent(c client.Client, ns, name string, intent fleetv1alpha1.RolloutIntent) error {
	raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"intent": intent}})
	ro := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return c.Patch(context.Background(), ro, client.RawPatch(types.MergePatchType, raw))
}

// TestStoppingAFleetNeedsPromote: with the chart's fleet-operator role and
// Kargo's read rights only, a user may neither pause, resume, abort nor
// delete a running rollout (stopping a fleet release is a Kargo decision,
// like starting one); with promote on every wave Stage they may.
func TestStoppingAFleetNeedsPromote(t *testing.T) {
	ns := "sec-stop"
	newProject(t, ns)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, testutil.MakeFleetStage(ns, "prod").Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(1)}, fleetv1alpha1.Wave{Name: "rest"},
	).Obj()))
	grant(t, ns, controllerUser, fleetRules...)
	ctrlClient, _ := userClient(t, controllerUser)
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "running"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: strings.Repeat("ab", 20)},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentRun, Actor: "kubernetes:admin"},
	}
	require.Eventually(t, func() bool { return ctrlClient.Create(ctx, ro.DeepCopy()) == nil }, wait, tick)

	const user = "operator"
	bindChartRole(t, ns, user, "-fleet-operator")
	grant(t, ns, user, kargoViewerRules...)
	c, _ := userClient(t, user)
	require.Eventually(t, func() bool {
		err := setIntent(c, ns, "running", fleetv1alpha1.IntentPause)
		return err != nil && strings.Contains(err.Error(), "spec.intent: Forbidden")
	}, wait, tick, "the fleet-operator role alone may not pause")
	for _, intent := range []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentPause, fleetv1alpha1.IntentAbort} {
		err := setIntent(c, ns, "running", intent)
		require.ErrorContains(t, err, fmt.Sprintf(`spec.intent: Forbidden: user "operator" may not set intent %s on a FleetRollout `+
			`of FleetStage "prod": pausing, resuming and aborting need Kargo's promote permission`, intent))
		require.ErrorContains(t, err, "lacks it on prod-pilot, prod-rest")
	}
	err := c.Delete(ctx, ro.DeepCopy())
	require.ErrorContains(t, err, `user "operator" may not delete FleetRollout "running" while it is Pending: deleting a running rollout aborts it`)
	got := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ro), got))
	require.Equal(t, fleetv1alpha1.IntentRun, got.Spec.Intent, "nothing changed")

	grant(t, ns, user, promoteOn("prod-pilot"))
	require.Eventually(t, func() bool {
		err = setIntent(c, ns, "running", fleetv1alpha1.IntentPause)
		return err != nil && strings.Contains(err.Error(), "lacks it on prod-rest")
	}, wait, tick, "promote on one wave Stage is not enough: %v", err)

	grant(t, ns, user, promoteOn("prod-rest"))
	require.Eventually(t, func() bool { return setIntent(c, ns, "running", fleetv1alpha1.IntentPause) == nil }, wait, tick,
		"with promote on every wave Stage the operator pauses")
	require.NoError(t, setIntent(c, ns, "running", fleetv1alpha1.IntentRun), "and resumes")
	require.NoError(t, setIntent(c, ns, "running", fleetv1alpha1.IntentAbort), "and aborts")
	require.NoError(t, c.Delete(ctx, ro.DeepCopy()), "and deletes")
}

// TestRollbackAdmission: a rollback returns the targets of a forward
// rollout of its own FleetStage, to Freight that passed the fleet, and
// its rollbackOf never changes; checked with real SubjectAccessReviews for
// a user holding promote on every wave Stage.
func TestRollbackAdmission(t *testing.T) {
	ns := "sec-rollback-of"
	newProject(t, ns)
	ctx := context.Background()
	waves := []fleetv1alpha1.Wave{{Name: "pilot", Count: testutil.Int(1)}, {Name: "rest"}}
	for _, name := range []string{"prod", "staging"} {
		require.NoError(t, env.Client.Create(ctx, testutil.MakeFleetStage(ns, name).FromStage("app-"+name).Waves(waves...).Obj()))
	}
	good := strings.Repeat("11", 20)
	// The FleetStage controller writes the status too: retry on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs := &fleetv1alpha1.FleetStage{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, fs); err != nil {
			return err
		}
		fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: good}
		return env.Client.Status().Update(ctx, fs)
	}))

	grant(t, ns, controllerUser, fleetRules...)
	ctrlClient, _ := userClient(t, controllerUser)
	forward := func(name, fleetStage, freight string) *fleetv1alpha1.FleetRollout {
		ro := fleetrollout.NewForward(fleetrollout.Forward{Namespace: ns, FleetStage: fleetStage,
			Freight: fleetv1alpha1.FreightReference{Name: freight}, Promotion: name, Actor: "admin"})
		ro.Name = name
		require.Eventually(t, func() bool { return ctrlClient.Create(ctx, ro) == nil }, wait, tick)
		return ro
	}
	prodBad := forward("prod-bad", "prod", strings.Repeat("22", 20))
	stagingRo := forward("staging-x", "staging", strings.Repeat("33", 20))

	const user = "rel-eng"
	bindChartRole(t, ns, user, "-fleet-operator")
	grant(t, ns, user, kargoViewerRules...)
	grant(t, ns, user, promoteOn("prod-pilot", "prod-rest"))
	c, _ := userClient(t, user)
	rollback := func(of *fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
		rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: freight},
			Actor: fswebhook.Actor(user)})
		rb.Spec.FleetStage = "prod"
		rb.Labels[fleetv1alpha1.FleetStageLabel] = "prod"
		return rb
	}

	var err error
	require.Eventually(t, func() bool {
		err = c.Create(ctx, rollback(stagingRo, good))
		return err != nil && strings.Contains(err.Error(), "spec.rollbackOf")
	}, wait, tick, "last: %v", err)
	require.ErrorContains(t, err, `spec.rollbackOf: Invalid value: "staging-x": FleetRollout "staging-x" belongs to FleetStage "staging", not "prod"`)
	require.ErrorContains(t, c.Create(ctx, rollback(prodBad, strings.Repeat("44", 20))),
		`spec.freight.name: Forbidden: Freight 4444444 has not passed FleetStage "prod"`)

	rb := rollback(prodBad, good)
	require.NoError(t, c.Create(ctx, rb), "a rollback of the fleet's own rollout to its last good Freight")
	// The webhook reads rollouts from its cache: the rollback just created
	// may take a moment to appear there.
	require.Eventually(t, func() bool {
		err = c.Create(ctx, rollback(rb, good))
		return err != nil && !strings.Contains(err.Error(), "Not found")
	}, wait, tick, "last: %v", err)
	require.ErrorContains(t, err, `FleetRollout "prod-bad-rb" is itself a rollback`)

	patched := rb.DeepCopy()
	patched.Spec.RollbackOf = stagingRo.Name
	require.ErrorContains(t, c.Patch(ctx, patched, client.MergeFrom(rb)), "spec: only spec.intent may change after creation")
	require.ErrorContains(t, ctrlClient.Patch(ctx, patched, client.MergeFrom(rb)), "spec: only spec.intent may change after creation",
		"not even the controller")
}

// TestFleetStageNeedsStageRights: a FleetStage makes the controller write
// Stages, so its author must be allowed to write them: create and update
// Stages in the Project, update the adopted Stage, and update every Stage
// the controller re-points (those taking Freight from the adopted one). An
// inline template may not read Secrets.
func TestFleetStageNeedsStageRights(t *testing.T) {
	ns := "sec-stage-rights"
	newProject(t, ns)
	ctx := context.Background()
	newProdStage(t, ns, "prod")
	dr := newProdStage(t, ns, "prod-dr")
	dr.Spec.RequestedFreight[0].Sources.Stages = []string{"prod"}
	require.NoError(t, env.Client.Update(ctx, dr))

	const user = "platform"
	bindChartRole(t, ns, user, "-fleet-operator")
	grant(t, ns, user, kargoViewerRules...)
	c, _ := userClient(t, user)
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").Obj()

	var err error
	require.Eventually(t, func() bool {
		err = c.Create(ctx, fs.DeepCopy())
		return err != nil && strings.Contains(err.Error(), "stages.kargo.akuity.io")
	}, wait, tick, "last: %v", err)
	require.ErrorContains(t, err, `spec: Forbidden: user "platform" may not create and update stages.kargo.akuity.io in namespace "sec-stage-rights"`)
	require.ErrorContains(t, err, `spec.stage.fromStage: Forbidden: user "platform" may not update Stage "prod": adopting a Stage`)
	require.ErrorContains(t, err, `spec.stage.fromStage: Forbidden: user "platform" may not update Stage "prod-dr", which takes Freight from "prod"`)

	stageWriter := rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"}, Verbs: []string{"create", "update"}}
	// Create and update on Stages in general, without a name: a Role
	// cannot grant create for named objects, and every Stage is then
	// writable; so the adopted and downstream Stages are checked by a
	// second author whose update rights name Stages one by one.
	grant(t, ns, user, stageWriter)
	require.Eventually(t, func() bool { return c.Create(ctx, fs.DeepCopy()) == nil }, wait, tick,
		"an author who may write every Stage of the Project may adopt one")

	const narrow = "narrow"
	bindChartRole(t, ns, narrow, "-fleet-operator")
	grant(t, ns, narrow, kargoViewerRules...)
	grant(t, ns, narrow, rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{"kargo.akuity.io"}, Resources: []string{"stages"}, Verbs: []string{"update"},
			ResourceNames: []string{"prod2"}})
	nc, _ := userClient(t, narrow)
	newProdStage(t, ns, "prod2")
	dr2 := newProdStage(t, ns, "prod2-dr")
	dr2.Spec.RequestedFreight[0].Sources.Stages = []string{"prod2"}
	require.NoError(t, env.Client.Update(ctx, dr2))
	adopt2 := testutil.MakeFleetStage(ns, "fleet2").FromStage("prod2").Obj()
	require.Eventually(t, func() bool {
		err = nc.Create(ctx, adopt2.DeepCopy())
		return err != nil && strings.Contains(err.Error(), `may not update Stage "prod2-dr"`)
	}, wait, tick, "last: %v", err)
	require.NotContains(t, err.Error(), `may not update Stage "prod2":`, "the adopted Stage is theirs to update")

	inline := testutil.MakeFleetStage(ns, "inline").InlineStage("apps",
		`{"spec":{"steps":[{"uses":"http","config":{"headers":[{"name":"Authorization","value":"${{ secret('db').password }}"}]}}]}}`).Obj()
	err = c.Create(ctx, inline)
	require.ErrorContains(t, err, `spec.stage.inline.promotionTemplate: Invalid value: "${{ secret('db').password }}": an inline template may not read Secrets`)
	inline.Spec.Stage.Inline.PromotionTemplate = runtime.RawExtension{Raw: []byte(`{"spec":{"steps":[{"uses":"http"}]}}`)}
	require.NoError(t, c.Create(ctx, inline), "without secret() the same author may")
}
