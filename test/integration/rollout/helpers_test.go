//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	wait = 90 * time.Second
	tick = 100 * time.Millisecond
)

// The Freight of every fleet: the good one, and the bad one.
const (
	goodFreight = "f1-good"
	badFreight  = "f2-bad"
)

// fleet is one Project with an adopted "prod" Stage, two Freight (good and
// bad) and a FleetStage "fleet" over inline targets.
type fleet struct {
	t           *testing.T
	ns          string
	good        string
	bad         string
	fleetKey    client.ObjectKey
	autoPromote bool
	firstWave   string
}

type fleetSpec struct {
	targets     []fleetv1alpha1.InlineTarget
	waves       []fleetv1alpha1.Wave
	policy      fleetv1alpha1.FleetPolicy
	autoPromote bool
	// steps replace the adopted Stage's per-target template (default: one
	// simulated argocd-update step).
	steps []kargo.PromotionStep
	// guardOff labels the Project as an administrator who turned the
	// admission guard off for it would: only the post-hoc target guard
	// stands between Kargo's own paths and the targets (the backstop).
	guardOff bool
	// squat are target IDs whose target Stage names someone else's Stage
	// holds before the FleetStage exists: the FleetStage is then not
	// Ready, and newFleet waits for it to have reconciled instead.
	squat []string
	// analysis is the FleetStage's spec.analysis.
	analysis *fleetv1alpha1.FleetAnalysis
}

// newFleet creates the Project and waits until the FleetStage is Ready.
func newFleet(t *testing.T, ns string, spec fleetSpec) *fleet {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	project := envtest.ProjectNamespace(ns)
	if spec.guardOff {
		project.Labels[fleetv1alpha1.PromotionGuardLabel] = fleetv1alpha1.PromotionGuardOff
	}
	require.NoError(t, c.Create(ctx, project))
	if spec.autoPromote {
		require.NoError(t, c.Create(ctx, &kargo.ProjectConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns},
			Spec: kargo.ProjectConfigSpec{PromotionPolicies: []kargo.PromotionPolicy{{
				StageSelector: &kargo.PromotionPolicySelector{LabelSelector: metav1.LabelSelector{
					MatchLabels: map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave},
				}},
				AutoPromotionEnabled: true,
			}}},
		}))
	}
	steps := spec.steps
	if steps == nil {
		steps = []kargo.PromotionStep{testutil.ArgoCDUpdateStep(`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}"}]}`)}
	}
	testutil.Create(t, c, testutil.MakeStage(ns, "prod").Steps(steps...).Obj())
	f := &fleet{t: t, ns: ns, good: goodFreight, bad: badFreight, fleetKey: client.ObjectKey{Namespace: ns, Name: "fleet"},
		autoPromote: spec.autoPromote, firstWave: spec.waves[0].Name}
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").InlineTargets(spec.targets...).Waves(spec.waves...).Policy(spec.policy).Obj()
	fs.Spec.Analysis = spec.analysis
	for _, id := range spec.squat {
		testutil.Create(t, c, testutil.MakeStage(ns, render.TargetStageName("fleet", id)).Steps(steps...).Obj())
	}
	testutil.Create(t, c, fs)
	if len(spec.squat) > 0 {
		testutil.Await(t, c, fs, wait, func(fs *fleetv1alpha1.FleetStage) bool {
			return fs.Status.ObservedGeneration == fs.Generation && len(fs.Status.Waves) > 0
		}, "FleetStage %s/fleet never reconciled", ns)
		return f
	}
	testutil.AwaitReady(t, c, fs, wait)
	return f
}

// inline returns n targets named <prefix>-NN with the given labels and params.
func inline(prefix string, n int, labels, params map[string]string) []fleetv1alpha1.InlineTarget {
	out := make([]fleetv1alpha1.InlineTarget, n)
	for i := range out {
		out[i] = fleetv1alpha1.InlineTarget{Name: fmt.Sprintf("%s-%02d", prefix, i), Labels: labels, Params: params}
	}
	return out
}

// ship makes a new Freight appear, as a Warehouse would, and lets it enter
// the fleet: through Kargo's auto-promotion of the first wave Stage when the
// Project enables it, else by promoting it there as `kargo promote` does.
// Freight appears only when shipped because Kargo auto-promotes the NEWEST
// Freight: a Freight created early would enter the fleet at once.
func (f *fleet) ship(freight string) {
	f.t.Helper()
	f.ensureFreight(freight)
	if !f.autoPromote {
		f.promote(freight, f.firstWave)
	}
}

func (f *fleet) ensureFreight(freight string) {
	f.t.Helper()
	err := env.Client.Create(context.Background(), testutil.MakeFreight(f.ns, freight).Image("example.com/guestbook").Obj())
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(f.t, err)
	}
}

// promote promotes freight to the wave Stage of wave, as `kargo promote` does.
func (f *fleet) promote(freight, wave string) {
	f.t.Helper()
	f.ensureFreight(freight)
	p := kargo.NewPromotion(f.ns, render.WaveStageName("fleet", wave), freight, nil, nil)
	require.NoError(f.t, env.Client.Create(context.Background(), p))
}

// rollout waits for the forward rollout of freight to reach one of phases.
func (f *fleet) rollout(freight string, phases ...fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var found *fleetv1alpha1.FleetRollout
	require.Eventually(f.t, func() bool {
		found = f.findRollout(freight, fleetv1alpha1.DirectionForward)
		if found == nil {
			return false
		}
		for _, p := range phases {
			if found.Status.Phase == p {
				return true
			}
		}
		return false
	}, wait, tick, "no rollout of %s reached %v (last: %s)", freight, phases, describe(&found))
	return found
}

// describe says what *ro is when a failure message is written, not when
// require.Eventually is called (its arguments are evaluated then, before
// the first poll).
func describe(ro **fleetv1alpha1.FleetRollout) fmt.Stringer { return rolloutDescription{ro} }

// rolloutDescription is the phase and message of the rollout it points to.
type rolloutDescription struct{ ro **fleetv1alpha1.FleetRollout }

func (d rolloutDescription) String() string {
	if *d.ro == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s", (*d.ro).Status.Phase, (*d.ro).Status.Message)
}

// awaitRollback waits until the automatic rollback to freight has
// finished, and returns it.
func (f *fleet) awaitRollback(freight string) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var rb *fleetv1alpha1.FleetRollout
	require.Eventually(f.t, func() bool {
		rb = f.findRollout(freight, fleetv1alpha1.DirectionRollback)
		return rb != nil && rb.Status.Phase.IsFinal()
	}, wait, tick, "the automatic rollback never finished")
	return rb
}

func (f *fleet) findRollout(freight string, dir fleetv1alpha1.RolloutDirection) *fleetv1alpha1.FleetRollout {
	list := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(f.t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	for i := range list.Items {
		if list.Items[i].Spec.Freight.Name == freight && list.Items[i].Spec.Direction == dir {
			return &list.Items[i]
		}
	}
	return nil
}

// targetFreight maps each target id to the Freight its Stage runs now.
func (f *fleet) targetFreight() map[string]string {
	f.t.Helper()
	return targetFreightIn(f.t, f.ns)
}

// targetFreightIn maps each target id of the Project ns to the Freight its
// Stage runs now ("" for none).
func targetFreightIn(t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	out := map[string]string{}
	for _, st := range list.Items {
		names := st.CurrentFreightNames()
		out[st.Labels[fleetv1alpha1.TargetLabel]] = ""
		if len(names) > 0 {
			out[st.Labels[fleetv1alpha1.TargetLabel]] = names[0]
		}
	}
	return out
}

// promotionsOf lists the Promotions of freight to target Stages of wave.
func (f *fleet) promotionsOf(freight, wave string) []kargo.Promotion {
	f.t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(f.t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	var out []kargo.Promotion
	for _, p := range list.Items {
		if p.Spec.Freight == freight && p.Labels[fleetv1alpha1.WaveLabel] == wave {
			out = append(out, p)
		}
	}
	return out
}

// lastGood waits for the FleetStage to record a last good Freight and
// returns it.
func (f *fleet) lastGood() string {
	f.t.Helper()
	fs := &fleetv1alpha1.FleetStage{}
	require.Eventually(f.t, func() bool {
		return env.Client.Get(context.Background(), f.fleetKey, fs) == nil && fs.Status.LastGoodFreight != nil
	}, wait, tick)
	return fs.Status.LastGoodFreight.Name
}

// latestWavePromotion returns the newest Promotion of freight to the wave
// Stage of wave.
func (f *fleet) latestWavePromotion(wave, freight string) *kargo.Promotion {
	list := &kargo.PromotionList{}
	require.NoError(f.t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	var newest *kargo.Promotion
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.Stage == render.WaveStageName("fleet", wave) && p.Spec.Freight == freight &&
			(newest == nil || p.Name > newest.Name) {
			newest = p
		}
	}
	return newest
}

// adminActor is the actor the FleetRollout webhook requires of the test's
// administrator client: "kubernetes:<username>", as the CLI records it.
func adminActor(t *testing.T) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	require.NoError(t, env.Client.Create(context.Background(), review))
	return fswebhook.Actor(review.Status.UserInfo.Username)
}
