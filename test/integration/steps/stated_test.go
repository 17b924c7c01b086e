//go:build integration

package steps_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// forgedActor is an actor a holder of the step token writes into a body.
const forgedActor = "kubernetes:ceo@example.com"

// TestSecurity_actorIsThePromotions sends fleet-wave and fleet-rollback
// calls whose body names another actor: the forward rollout and the
// rollback record the calling Promotion's create-actor, as Kargo's webhook
// wrote it.
func TestSecurity_actorIsThePromotions(t *testing.T) {
	f := newSecurityFixture(t)
	creator := f.pilot.Annotations[kargo.CreateActorAnnotation]
	require.NotEmpty(t, creator, "Kargo's webhook records who created the Promotion")
	require.NotEqual(t, forgedActor, creator)

	req := f.request()
	req["actor"] = forgedActor
	status, resp := post(t, stepServer.URL, steps.WaveStepName, f.token, req)
	require.Equal(t, http.StatusOK, status, resp.Message)
	forward := waitRollout(t, f.ns)
	require.Equal(t, creator, forward.Spec.Actor, "the forward rollout's actor is the Promotion's creator")

	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, k8s.Get(t.Context(), keyOf(f.ns, "prod"), fs))
	newFreight(t, f.ns, "f0")
	fs.Status.CurrentRollout = forward.Name
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "f0"}
	require.NoError(t, k8s.Status().Update(t.Context(), fs))

	rb := stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, "rollback::start", map[string]any{"mode": "start"})
	rb["actor"] = forgedActor
	status, resp = post(t, stepServer.URL, steps.RollbackStepName, f.token, rb)
	require.Equal(t, http.StatusOK, status, resp.Message)
	var rollback fleetv1alpha1.FleetRollout
	require.NoError(t, k8s.Get(t.Context(), keyOf(f.ns, fleetrollout.RollbackName(forward.Name)), &rollback))
	require.Equal(t, creator, rollback.Spec.Actor, "the rollback's actor is the Promotion's creator")
}

// TestSecurity_unknownActor runs a wave from a Promotion Kargo's control
// plane created (as auto-promotion does), which carries no create-actor:
// the rollout records "unknown", and `kargo-fleet status` shows it.
func TestSecurity_unknownActor(t *testing.T) {
	ctx := t.Context()
	ns := newProject(t)
	fs := newFleetStage(t, ns)
	token := projectToken(t, ns)
	freight := newFreight(t, ns, "f1").Name
	newStage(t, ns, "prod-pilot", generatedBy(fs, fleetv1alpha1.RoleWave, "pilot"), hangs)

	// Kargo's API server, promoting on behalf of a client it cannot name.
	kargoAPI, err := env.AddUser("system:serviceaccount:kargo:kargo-api", "system:masters")
	require.NoError(t, err)
	require.Regexp(t, kargosim.DefaultControlPlaneUsers, "system:serviceaccount:kargo:kargo-api")
	kargoClient, err := client.New(kargoAPI, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	p := kargo.NewPromotion(ns, "prod-pilot", freight, nil, nil)
	require.NoError(t, kargoClient.Create(ctx, p))
	p = waitPromotion(t, p, 10*time.Second, phaseIs(kargo.PromotionRunning))
	require.NotContains(t, p.Annotations, kargo.CreateActorAnnotation)

	req := stepRequest(ns, "prod-pilot", p.Name, freight, "fleet::start", map[string]any{"mode": "start"})
	req["actor"] = forgedActor
	status, resp := post(t, stepServer.URL, steps.WaveStepName, token, req)
	require.Equal(t, http.StatusOK, status, resp.Message)
	ro := waitRollout(t, ns)
	require.Equal(t, fleetrollout.UnknownActor, ro.Spec.Actor)

	require.NoError(t, k8s.Get(ctx, keyOf(ns, fs.Name), fs))
	fs.Status.CurrentRollout = ro.Name
	require.NoError(t, k8s.Status().Update(ctx, fs))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))
	var out bytes.Buffer
	cmd := cli.NewRootCommand(&out, &out)
	cmd.SetArgs([]string{"status", fs.Name, "-n", ns, "--kubeconfig", kubeconfig})
	require.NoError(t, cmd.Execute(), out.String())
	require.Contains(t, out.String(), "by unknown", out.String())
	require.NotContains(t, out.String(), forgedActor)
}

// TestSecurity_rollbackConfigIsThePromotions calls fleet-rollback for a
// Promotion whose template runs the fleet-rollback task with freight f0:
// a call may ask for what that step states and nothing else, and a reason
// that is an unevaluated expression is refused.
func TestSecurity_rollbackConfigIsThePromotions(t *testing.T) {
	ctx := t.Context()
	f := newSecurityFixture(t, alsoUsesTask("fleet-rollback", "rollback", "freight", "f0"))
	newFreight(t, f.ns, "f0")
	newFreight(t, f.ns, "f9")
	forward, _ := f.currentRollout(t, "f0", fleetv1alpha1.RollbackManual)

	var stated kargo.Promotion
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(f.pilot), &stated))
	aliases := make([]string, 0, len(stated.Spec.Steps))
	for _, s := range stated.Spec.Steps {
		aliases = append(aliases, s.As)
	}
	require.Contains(t, aliases, "rollback::start", "Kargo expanded the task into the Promotion's steps")

	refused := []struct {
		name, alias string
		config      map[string]any
		wantStatus  int
		wantReason  string
		wantMsg     string
	}{
		{name: "anyFreight the step does not state", alias: "rollback::start",
			config:     map[string]any{"mode": "start", "freight": "f0", "anyFreight": "true"},
			wantStatus: http.StatusForbidden, wantReason: stepserver.ReasonConfigNotStated,
			wantMsg: `fleet-rollback config field anyFreight is true, but step "rollback::start" of Promotion "` +
				f.pilot.Name + `" leaves it unset`},
		{name: "other Freight than the step states", alias: "rollback::start",
			config:     map[string]any{"mode": "start", "freight": "f9", "anyFreight": "true"},
			wantStatus: http.StatusForbidden, wantReason: stepserver.ReasonConfigNotStated,
			wantMsg: `fleet-rollback config field freight is "f9", but step "rollback::start" of Promotion "` +
				f.pilot.Name + `" states "f0"`},
		{name: "rollbackOf the step does not state", alias: "rollback::wait",
			config:     map[string]any{"mode": "wait", "freight": "f0", "rollbackOf": forward.Name},
			wantStatus: http.StatusForbidden, wantReason: stepserver.ReasonConfigNotStated,
			wantMsg: "fleet-rollback config field rollbackOf is \"" + forward.Name + "\""},
		{name: "an alias the Promotion does not have", alias: "other::start",
			config:     map[string]any{"mode": "start", "anyFreight": true},
			wantStatus: http.StatusForbidden, wantReason: stepserver.ReasonConfigNotStated,
			wantMsg: `has no step aliased "other::start"`},
		{name: "a reason holding a secret() expression", alias: "rollback::start",
			config:     map[string]any{"mode": "start", "freight": "f0", "reason": "${{ secret('db').password }}"},
			wantStatus: http.StatusUnprocessableEntity, wantReason: stepserver.ReasonInvalidConfig,
			wantMsg: "reason: must be plain text"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			status, resp := post(t, stepServer.URL, steps.RollbackStepName, f.token,
				stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, c.alias, c.config))
			require.Equal(t, c.wantStatus, status, resp.Message)
			require.Equal(t, steps.StateFailed, resp.State)
			require.NotNil(t, resp.Error)
			require.Equal(t, c.wantReason, resp.Error.Reason)
			require.Contains(t, resp.Message, c.wantMsg)
			for _, ro := range rollouts(t, f.ns) {
				require.NotEqual(t, fleetv1alpha1.DirectionRollback, ro.Spec.Direction, "a refused call creates nothing")
			}
		})
	}

	// What the Promotion's step states is accepted.
	status, resp := post(t, stepServer.URL, steps.RollbackStepName, f.token,
		stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, "rollback::start",
			map[string]any{"mode": "start", "freight": "f0", "rollbackOf": "", "anyFreight": "", "reason": "error rate"}))
	require.Equal(t, http.StatusOK, status, resp.Message)
	var rollback fleetv1alpha1.FleetRollout
	require.NoError(t, k8s.Get(ctx, keyOf(f.ns, fleetrollout.RollbackName(forward.Name)), &rollback))
	require.Equal(t, "f0", rollback.Spec.Freight.Name)
	require.Equal(t, "error rate", rollback.Annotations[fleetv1alpha1.RollbackReasonAnnotation])
	require.NotContains(t, rollback.Annotations, fleetv1alpha1.AnyFreightAnnotation)
}
