package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	goodFreight = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	badFreight  = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// newFakeClient returns a fake client holding copies of objs (the fake
// client writes into the objects it is given, and parallel tests share
// them); it answers SelfSubjectReviews as user (none: the request fails).
func newFakeClient(user string, objs ...client.Object) client.Client {
	copies := make([]client.Object, len(objs))
	for i, o := range objs {
		copies[i] = o.DeepCopyObject().(client.Object)
	}
	return fake.NewClientBuilder().
		WithScheme(cliScheme()).
		WithObjects(copies...).
		WithStatusSubresource(&fleetv1alpha1.FleetStage{}, &fleetv1alpha1.FleetRollout{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if review, ok := obj.(*authenticationv1.SelfSubjectReview); ok {
					if user == "" {
						return context.DeadlineExceeded
					}
					review.Status.UserInfo.Username = user
					return nil
				}
				return c.Create(ctx, obj, opts...)
			},
		}).
		Build()
}

// testStreams returns streams reading nothing and writing to out.
func testStreams(out io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}
}

// execute runs cmd with args and returns its output and error.
func execute(cmd *cobra.Command, out *bytes.Buffer, args ...string) (string, error) {
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return out.String(), err
}

// fleetStage is the FleetStage shop/prod with four waves.
func fleetStage(current, last string, lastGood string) *fleetv1alpha1.FleetStage {
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Status = fleetv1alpha1.FleetStageStatus{
		Conditions: []metav1.Condition{{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: fleetv1alpha1.ReconciledReason, LastTransitionTime: metav1.NewTime(t0)}},
		Targets:   fleetv1alpha1.TargetCounts{Candidates: 200, Selected: 200},
		WaveCount: 4,
		Waves: []fleetv1alpha1.WaveMembership{
			{Name: "pilot", Stage: "prod-pilot", Members: 2}, {Name: "canary", Stage: "prod-canary", Members: 20},
			{Name: "general", Stage: "prod-general", Members: 158}, {Name: "critical", Stage: "prod-critical", Members: 20},
		},
		Versions:       []fleetv1alpha1.FreightCount{{Freight: goodFreight, Targets: 190}, {Freight: badFreight, Targets: 10}},
		CurrentRollout: current,
		LastRollout:    last,
	}
	if lastGood != "" {
		fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: lastGood}
	}
	return fs
}

// rollout builds a FleetRollout of shop/prod created at t0+age.
func rollout(name string, dir fleetv1alpha1.RolloutDirection, freight string, phase fleetv1alpha1.RolloutPhase,
	intent fleetv1alpha1.RolloutIntent, age time.Duration) *fleetv1alpha1.FleetRollout {
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(age)),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "prod"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: freight},
			Direction: dir, Intent: intent},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase, StartedAt: &metav1.Time{Time: t0.Add(age + time.Second)}},
	}
	if dir == fleetv1alpha1.DirectionRollback {
		ro.Spec.RollbackOf = "prod-bad"
	}
	return ro
}

func freight(name, alias string) *kargo.Freight {
	return testutil.MakeFreight("shop", name).Origin("app").Alias(alias).Obj()
}

func getRollout(t *testing.T, c client.Client, name string) *fleetv1alpha1.FleetRollout {
	t.Helper()
	ro := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, ro))
	return ro
}
