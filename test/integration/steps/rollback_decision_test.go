//go:build integration

package steps_test

import (
	"bytes"
	"cmp"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// rollbackCase is one rollback request and the state it meets. Of and
// Freight are the request's (empty: the asker's default); the FleetRollout
// reconciler answers a defaulted request through its automatic policy and
// a request that names either through a rollback FleetRollout applied by
// hand, which it plans only if the same decision allows it.
type rollbackCase struct {
	name string
	// setup arranges the project around the breached current rollout and
	// returns the request's rollbackOf.
	setup      func(t *testing.T, f *securityFixture, breached *fleetv1alpha1.FleetRollout) string
	lastGood   bool
	freight    string
	wantReason rollout.RollbackReason
	// stated are the inputs of the fleet-rollback task the pilot
	// Promotion states (name, value, ...): the step server takes a
	// rollbackOf or freight only as the Promotion's own step states it.
	stated []string
}

// TestRollback_sameAnswerWhoeverAsks drives the FleetRollout reconciler,
// the fleet-rollback step and `kargo-fleet rollback` through the same
// refused requests on a real API server: each gives the same reason and the
// same message (only the closing hint names its own way out), and none
// creates a rollback.
func TestRollback_sameAnswerWhoeverAsks(t *testing.T) {
	ctx := t.Context()
	none := func(*testing.T, *securityFixture, *fleetv1alpha1.FleetRollout) string { return "" }
	cases := []rollbackCase{
		{
			name: "held back",
			// A later rollout of the last good Freight breached: it is held
			// back from the fleet.
			setup: func(t *testing.T, f *securityFixture, _ *fleetv1alpha1.FleetRollout) string {
				again := fleetrollout.NewForward(fleetrollout.Forward{Namespace: f.ns, FleetStage: "prod",
					Freight: fleetv1alpha1.FreightReference{Name: "f0"}, Promotion: "prod-pilot.01jagain.f0", Alias: "fleet::start"})
				require.NoError(t, k8s.Create(ctx, again))
				setRolloutStatus(t, again, breachedStatus(), nil)
				return ""
			},
			lastGood:   true,
			wantReason: rollout.RollbackHeldBack,
		},
		{
			name:       "no last good Freight",
			setup:      none,
			wantReason: rollout.RollbackNoLastGoodFreight,
		},
		{
			name: "not proven",
			setup: func(t *testing.T, f *securityFixture, _ *fleetv1alpha1.FleetRollout) string {
				newFreight(t, f.ns, "f9")
				return ""
			},
			lastGood:   true,
			freight:    "f9",
			wantReason: rollout.RollbackNotProven,
			stated:     []string{"freight", "f9"},
		},
		{
			name: "other FleetStage",
			setup: func(t *testing.T, f *securityFixture, _ *fleetv1alpha1.FleetRollout) string {
				other := fleetrollout.NewForward(fleetrollout.Forward{Namespace: f.ns, FleetStage: "staging",
					Freight: fleetv1alpha1.FreightReference{Name: f.freight}, Promotion: "staging-pilot.01jother.f1", Alias: "fleet::start"})
				require.NoError(t, k8s.Create(ctx, other))
				setRolloutStatus(t, other, breachedStatus(), nil)
				return other.Name
			},
			lastGood:   true,
			wantReason: rollout.RollbackOtherFleetStage,
			stated:     []string{"rollbackOf", fleetrollout.ForwardName("staging", "f1", "staging-pilot.01jother.f1")},
		},
	}

	type fixture struct {
		*securityFixture
		breached *fleetv1alpha1.FleetRollout
		of       string
	}
	fixtures := make([]fixture, len(cases))
	for i, c := range cases {
		f := newSecurityFixture(t, alsoUsesTask("fleet-rollback", "rollback", c.stated...))
		newFreight(t, f.ns, "f0")
		// The automatic policy answers a defaulted request; a request that
		// names a rollout or Freight is a person's, under a Manual policy.
		breached, fs := f.currentRollout(t, "f0", fleetv1alpha1.RollbackAutomatic)
		if !c.lastGood {
			fs.Status.LastGoodFreight = nil
			require.NoError(t, k8s.Status().Update(ctx, fs))
		}
		setRolloutStatus(t, breached, breachedStatus(), nil)
		of := c.setup(t, f, breached)
		if of != "" || c.freight != "" {
			fs.Spec.Policy.Rollback.Mode = fleetv1alpha1.RollbackManual
			require.NoError(t, k8s.Update(ctx, fs))
		}
		fixtures[i] = fixture{securityFixture: f, breached: breached, of: of}
	}

	startRolloutReconciler(t)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))

	for i, c := range cases {
		f := fixtures[i]
		t.Run(c.name, func(t *testing.T) {
			// kargo-fleet rollback.
			args := []string{"rollback", "prod", "-n", f.ns, "--kubeconfig", kubeconfig}
			if f.of != "" {
				args = append(args, "--of", f.of)
			}
			if c.freight != "" {
				args = append(args, "--to", c.freight)
			}
			var out bytes.Buffer
			cmd := cli.NewRootCommand(&out, &out)
			cmd.SetArgs(args)
			cliErr := cmd.Execute()
			var refused *rollout.RollbackRefusal
			require.ErrorAs(t, cliErr, &refused, out.String())
			require.Equal(t, c.wantReason, refused.Reason, refused.Error())
			message := refused.Message

			// The fleet-rollback step.
			config := map[string]any{"mode": "start"}
			if f.of != "" {
				config["rollbackOf"] = f.of
			}
			if c.freight != "" {
				config["freight"] = c.freight
			}
			status, resp := post(t, stepServer.URL, steps.RollbackStepName, f.token,
				stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, "rollback::start", config))
			require.Equal(t, http.StatusUnprocessableEntity, status, resp.Message)
			require.Equal(t, steps.StateFailed, resp.State)
			require.Equal(t, string(c.wantReason), resp.Outputs["reason"])
			require.Contains(t, resp.Message, message, "the step says what the CLI says")

			// The FleetRollout reconciler.
			if f.of == "" && c.freight == "" {
				var cond *metav1.Condition
				require.Eventually(t, func() bool {
					var got fleetv1alpha1.FleetRollout
					require.NoError(t, k8s.Get(ctx, keyOf(f.ns, f.breached.Name), &got))
					cond = meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.RollbackCondition)
					return cond != nil
				}, 15*time.Second, 20*time.Millisecond, "the automatic policy answers")
				require.Equal(t, metav1.ConditionFalse, cond.Status)
				require.Equal(t, string(c.wantReason), cond.Reason)
				require.Contains(t, cond.Message, message, "the automatic policy says what the CLI says")
			} else {
				of := f.breached
				if f.of != "" {
					of = &fleetv1alpha1.FleetRollout{}
					require.NoError(t, k8s.Get(ctx, keyOf(f.ns, f.of), of))
				}
				freight := fleetv1alpha1.FreightReference{Name: "f0"}
				if c.freight != "" {
					freight.Name = c.freight
				}
				rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: freight, Actor: "kubernetes:admin"})
				rb.Spec.FleetStage, rb.Labels[fleetv1alpha1.FleetStageLabel] = "prod", "prod"
				require.NoError(t, k8s.Create(ctx, rb))
				var got fleetv1alpha1.FleetRollout
				require.Eventually(t, func() bool {
					require.NoError(t, k8s.Get(ctx, keyOf(f.ns, rb.Name), &got))
					return got.Status.Phase.IsFinal()
				}, 15*time.Second, 20*time.Millisecond, "the reconciler answers the rollback object")
				require.Equal(t, fleetv1alpha1.RolloutFailed, got.Status.Phase)
				require.Contains(t, got.Status.Message, "rollback refused: "+message, "the reconciler says what the CLI says")
				require.Nil(t, got.Status.Snapshot, "a refused rollback takes no plan")
			}
			for _, ro := range rollouts(t, f.ns) {
				if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
					require.Equal(t, fleetrollout.RollbackName(cmp.Or(f.of, f.breached.Name)), ro.Name,
						"only the rollback object applied by hand exists")
				}
			}
		})
	}
}

// breachedStatus is a forward rollout's status after a breach ended it.
func breachedStatus() fleetv1alpha1.FleetRolloutStatus {
	now := metav1.Now()
	st := fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, FinishedAt: &now, Message: "halted: 1 of 1 failed"}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
		Status: metav1.ConditionTrue, Reason: "WaveThresholdBreached", Message: "1 of 1 failed"})
	return st
}
