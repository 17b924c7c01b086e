//go:build integration

package rollout_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/demo"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// demoFleet is the demo's Project: its Stage, FleetStage (four waves,
// automatic rollback) and Freight, at a size that runs in seconds.
type demoFleet struct {
	t          *testing.T
	kubeconfig string
	good, bad  string
}

func newDemoFleet(t *testing.T) *demoFleet {
	t.Helper()
	ctx := context.Background()
	sc := demo.Scenario{Targets: 50, StepDelay: 200 * time.Millisecond}
	fs := sc.FleetStage()
	// One target back at a time, so the test acts while the rollback runs.
	fs.Spec.Policy.Rollback.MaxConcurrent = &intstr.IntOrString{Type: intstr.Int, IntVal: 1}
	objs := []client.Object{&kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: demo.Project}}, demo.WarehouseObject()}
	for _, f := range demo.Freight(time.Now()) {
		objs = append(objs, f)
	}
	objs = append(objs, sc.Stage(), fs)
	for _, o := range objs {
		require.Eventually(t, func() bool { return env.Client.Create(ctx, o.DeepCopyObject().(client.Object)) == nil }, wait, tick,
			"creating %T %s", o, o.GetName())
	}
	d := &demoFleet{t: t, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"),
		good: demo.FreightName(demo.GoodAlias), bad: demo.FreightName(demo.BadAlias)}
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, d.kubeconfig))
	require.Eventually(t, func() bool {
		got := d.fleetStage()
		return meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ReadyCondition)
	}, wait, tick, "the demo FleetStage never became Ready")
	return d
}

func (d *demoFleet) fleetStage() *fleetv1alpha1.FleetStage {
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(d.t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: demo.Project, Name: demo.FleetStageName}, fs))
	return fs
}

// promote promotes freight into the pilot wave Stage, as `kargo promote`.
func (d *demoFleet) promote(freight string) {
	d.t.Helper()
	p := kargo.NewPromotion(demo.Project, render.WaveStageName(demo.FleetStageName, demo.WavePilot), freight, nil, nil)
	require.NoError(d.t, env.Client.Create(context.Background(), p))
}

// kargoFleet runs the kargo-fleet command as the administrator.
func (d *demoFleet) kargoFleet(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append(args, "--kubeconfig", d.kubeconfig))
	err := cmd.Execute()
	return out.String(), err
}

// rollouts returns the demo fleet's rollouts by direction and Freight.
func (d *demoFleet) rollouts() []*fleetv1alpha1.FleetRollout {
	all, err := rolloutstore.List(context.Background(), env.Client, demo.Project, demo.FleetStageName)
	require.NoError(d.t, err)
	return all
}

// waitRollout waits for a rollout matching pick and cond.
func (d *demoFleet) waitRollout(what string, pick func(*fleetv1alpha1.FleetRollout) bool,
	cond func(*fleetv1alpha1.FleetRollout) bool) *fleetv1alpha1.FleetRollout {
	d.t.Helper()
	var found *fleetv1alpha1.FleetRollout
	require.Eventually(d.t, func() bool {
		found = nil
		for _, ro := range d.rollouts() {
			if pick(ro) {
				found = ro
			}
		}
		return found != nil && cond(found)
	}, 2*wait, 50*time.Millisecond, "%s (last: %s)", what, describe(&found))
	return found
}

// onFreight counts the targets by the Freight they run.
func (d *demoFleet) onFreight() map[string]int {
	out := map[string]int{}
	for _, freight := range targetFreightIn(d.t, demo.Project) {
		if freight != "" {
			out[freight]++
		}
	}
	return out
}

// shipGood runs the good Freight through every wave, approving the
// critical wave when it asks.
func (d *demoFleet) shipGood() {
	d.t.Helper()
	d.promote(d.good)
	approved := false
	d.waitRollout("the good rollout succeeds", d.forwardOf(d.good), func(ro *fleetv1alpha1.FleetRollout) bool {
		for _, w := range ro.Status.Waves {
			if w.Name == demo.WaveCritical && w.Phase == fleetv1alpha1.WaveWaitingForApproval && !approved {
				require.NoError(d.t, kargosim.Approve(context.Background(), env.Client,
					client.ObjectKey{Namespace: demo.Project, Name: d.good}, render.WaveStageName(demo.FleetStageName, demo.WaveCritical)))
				approved = true
			}
		}
		return ro.Status.Phase == fleetv1alpha1.RolloutSucceeded
	})
	require.Equal(d.t, map[string]int{d.good: 50}, d.onFreight())
}

func (d *demoFleet) forwardOf(freight string) func(*fleetv1alpha1.FleetRollout) bool {
	return func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight
	}
}

func rollbackOf(of string) func(*fleetv1alpha1.FleetRollout) bool {
	return func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Spec.RollbackOf == of }
}

func rollingBack(ro *fleetv1alpha1.FleetRollout) bool {
	for _, w := range ro.Status.Waves {
		if w.Succeeded > 0 {
			return ro.Status.Phase == fleetv1alpha1.RolloutRollingBack
		}
	}
	return false
}

// TestNoStopLeavesTheFleetOnBadFreight runs the demo fleet's breach: the
// bad Freight breaks the canary ring and the automatic rollback starts.
//
// `kargo-fleet abort` then stops the halted rollout but not its rollback,
// which returns every target to the good Freight. On a second breach the
// rollback itself is aborted on purpose, half-way, and on a third it is
// paused: each time `kargo-fleet status` names the command that returns
// the rest, and running it does.
func TestNoStopLeavesTheFleetOnBadFreight(t *testing.T) {
	d := newDemoFleet(t)
	d.shipGood()

	// Breach, automatic rollback; abort while the rollback runs.
	d.promote(d.bad)
	bad := d.waitRollout("the bad rollout breaches", d.forwardOf(d.bad), fleetrollout.IsBreached)
	d.waitRollout("its automatic rollback runs", rollbackOf(bad.Name), rollingBack)
	out, err := d.kargoFleet("abort", demo.FleetStageName, "-n", demo.Project)
	require.NoError(t, err, out)
	require.Contains(t, out, "FleetRollout "+fleetrollout.RollbackName(bad.Name)+" (Rollback to ")
	require.Contains(t, strings.Join(strings.Fields(out), " "), "left as it is: it returns the fleet to its last good Freight")
	rb := d.waitRollout("the rollback finishes", rollbackOf(bad.Name), func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Status.Phase.IsFinal()
	})
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Equal(t, fleetv1alpha1.IntentRun, rb.Spec.Intent, "abort left the rollback alone")
	require.Equal(t, map[string]int{d.good: 50}, d.onFreight(), "every target is back on the good Freight")
	status, err := d.kargoFleet("status", demo.FleetStageName, "-n", demo.Project)
	require.NoError(t, err)
	require.NotContains(t, status, "Next:", "nothing left to do:\n%s", status)

	// A second breach (the bad Freight retried deliberately); this time the
	// rollback itself is aborted half-way.
	fs := d.fleetStage()
	patch := client.MergeFrom(fs.DeepCopy())
	metav1.SetMetaDataAnnotation(&fs.ObjectMeta, fleetv1alpha1.RetryFreightAnnotation, d.bad)
	require.NoError(t, env.Client.Patch(context.Background(), fs, patch))
	d.promote(d.bad)
	again := d.waitRollout("the retried bad rollout breaches", func(ro *fleetv1alpha1.FleetRollout) bool {
		return d.forwardOf(d.bad)(ro) && ro.Name != bad.Name
	}, fleetrollout.IsBreached)
	rb = d.waitRollout("its automatic rollback runs", rollbackOf(again.Name), rollingBack)
	out, err = d.kargoFleet("abort", demo.FleetStageName, "-n", demo.Project, "--rollout", rb.Name)
	require.NoError(t, err, out)
	require.Contains(t, out, "FleetRollout "+rb.Name+" (Rollback to ")
	aborted := d.waitRollout("the rollback is aborted", rollbackOf(again.Name), func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Status.Phase == fleetv1alpha1.RolloutAborted && !settlingRollout(ro)
	})
	left := d.onFreight()[d.bad]
	require.Positive(t, left, "the aborted rollback left targets on the bad Freight (%s)", aborted.Status.Message)

	out = d.runNamedCommand()
	retry := fleetrollout.RollbackAttemptName(again.Name, 2)
	require.Contains(t, out, "Created FleetRollout "+retry+": Rollback of "+again.Name)
	done := d.waitRollout("the second attempt finishes", func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Name == retry },
		func(ro *fleetv1alpha1.FleetRollout) bool { return ro.Status.Phase.IsFinal() })
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.GreaterOrEqual(t, int(done.Status.Snapshot.Targets), left, "the second attempt returns every target left on the bad Freight")
	require.Less(t, done.Status.Snapshot.Targets, aborted.Status.Snapshot.Targets, "and leaves out those the first attempt returned")
	require.Equal(t, map[string]int{d.good: 50}, d.onFreight(), "every target is back on the good Freight")

	status, err = d.kargoFleet("status", demo.FleetStageName, "-n", demo.Project)
	require.NoError(t, err)
	require.NotContains(t, status, "Next:")
	out, err = d.kargoFleet("rollback", demo.FleetStageName, "-n", demo.Project)
	require.NoError(t, err, "asking again is no refusal: %s", out)
	require.Contains(t, out, "FleetRollout "+retry+" returned the targets of "+again.Name)

	// A third breach; its rollback is paused half-way.
	d.promote(d.bad)
	third := d.waitRollout("the third bad rollout breaches", func(ro *fleetv1alpha1.FleetRollout) bool {
		return d.forwardOf(d.bad)(ro) && ro.Name != bad.Name && ro.Name != again.Name
	}, fleetrollout.IsBreached)
	rb = d.waitRollout("its automatic rollback runs", rollbackOf(third.Name), rollingBack)
	out, err = d.kargoFleet("pause", demo.FleetStageName, "-n", demo.Project, "--rollout", rb.Name)
	require.NoError(t, err, out)
	d.waitRollout("the rollback pauses", rollbackOf(third.Name), func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Status.Phase == fleetv1alpha1.RolloutPaused && !settlingRollout(ro)
	})
	require.Positive(t, d.onFreight()[d.bad], "the paused rollback left targets on the bad Freight")
	out = d.runNamedCommand()
	require.Contains(t, out, "Resumed FleetRollout "+rb.Name)
	done = d.waitRollout("the resumed rollback finishes", rollbackOf(third.Name), func(ro *fleetv1alpha1.FleetRollout) bool {
		return ro.Status.Phase.IsFinal()
	})
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.Equal(t, rb.Name, done.Name, "resumed, not retried")
	require.Equal(t, map[string]int{d.good: 50}, d.onFreight(), "every target is back on the good Freight")
}

// runNamedCommand reads the command `kargo-fleet status` names to return
// every target to the last good Freight, checks it is `kargo-fleet
// rollback`, runs it and returns its output.
func (d *demoFleet) runNamedCommand() string {
	d.t.Helper()
	status, err := d.kargoFleet("status", demo.FleetStageName, "-n", demo.Project)
	require.NoError(d.t, err)
	const marker = "To return every target to the last good Freight v1.4.0 ("
	i := strings.Index(status, marker)
	require.GreaterOrEqual(d.t, i, 0, "status names the command that returns every target:\n%s", status)
	// The command stands on the line after the marker's.
	_, after, ok := strings.Cut(status[i:], "):\n")
	require.True(d.t, ok, status[i:])
	command, _, _ := strings.Cut(after, "\n")
	command = strings.TrimSpace(command)
	require.Equal(d.t, "kargo-fleet rollback prod -n shop", command)
	out, err := d.kargoFleet(strings.Fields(command)[1:]...)
	require.NoError(d.t, err, out)
	return out
}

// settlingRollout says target Promotions of the rollout are still in
// flight.
func settlingRollout(ro *fleetv1alpha1.FleetRollout) bool {
	for _, w := range ro.Status.Waves {
		if w.InFlight > 0 {
			return true
		}
	}
	return false
}
