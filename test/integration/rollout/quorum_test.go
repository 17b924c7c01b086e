//go:build integration

package rollout_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestTwoPersonApproval: a wave that needs two people's approval waits
// after one, refuses the same person twice and anyone without the approve
// verb, and goes after a second person approves.
func TestTwoPersonApproval(t *testing.T) {
	f := newFleet(t, "two-person", fleetSpec{
		targets: inline("c", 4, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "rest", Approvals: &fleetv1alpha1.WaveApprovals{Count: 2}},
		},
		autoPromote: true,
	})
	kubeconfigs := map[string]string{}
	approve := func(user string, roles ...string) (string, error) {
		t.Helper()
		kubeconfig, ok := kubeconfigs[user]
		if !ok {
			kargoPromoter(t, f.ns, user, roles...)
			cfg, err := env.AddUser(user)
			require.NoError(t, err)
			kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
			require.NoError(t, fleetenv.WriteKubeconfig(cfg, kubeconfig))
			kubeconfigs[user] = kubeconfig
		}
		var out, errOut bytes.Buffer
		cmd := cli.NewRootCommand(&out, &errOut)
		cmd.SetArgs([]string{"approve", "fleet", "-n", f.ns, "--wave", "rest", "--kubeconfig", kubeconfig})
		err := cmd.Execute()
		return out.String(), err
	}

	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	require.Contains(t, ro.Status.Message, "0 of 2 approvals; 2 more: kargo-fleet approve fleet -n two-person --wave rest")

	out, err := approve("alice-"+f.ns, "kargo-fleet-approver")
	require.NoError(t, err)
	require.Contains(t, out, "Approved wave rest of FleetRollout "+ro.Name+" (Freight f1-good) as alice-"+f.ns+": 1 of 2 approvals")
	require.Eventually(t, func() bool {
		ro = f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro.Status.Phase == fleetv1alpha1.RolloutWaitingForApproval &&
			bytes.Contains([]byte(ro.Status.Message), []byte("1 of 2 approvals (alice-"+f.ns+"); one more"))
	}, wait, tick, "one approval of two: %v", describe(&ro))
	time.Sleep(time.Second)
	require.Empty(t, f.promotionsOf(f.good, "rest"), "no target of the wave starts after one approval")

	_, err = approve("alice-"+f.ns, "kargo-fleet-approver")
	require.ErrorContains(t, err, "never counts twice")
	_, err = approve("carol-"+f.ns, "kargo-fleet-fleet-operator")
	require.ErrorContains(t, err, `may not approve waves of FleetStage "fleet"`)

	out, err = approve("bob-"+f.ns, "kargo-fleet-approver")
	require.NoError(t, err)
	require.Contains(t, out, "2 of 2 approvals (alice-"+f.ns+", bob-"+f.ns+")")
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)

	// The audit trail names both approvers, as the API server authenticated
	// them, between the wave's wait and its start, after the Events are gone.
	trail := auditTrail(t, f.ns, "fleet", "ApprovalGiven", "ApprovalGiven", "RolloutSucceeded")
	started := firstOf(trail, "RolloutStarted", func(e *audit.Entry) bool { return e.Rollout == done.Name })
	waiting := firstOf(trail, "GateWaiting", func(e *audit.Entry) bool { return e.Wave == "rest" })
	alice := firstOf(trail, "ApprovalGiven", func(e *audit.Entry) bool { return e.Identity == "alice-"+f.ns })
	bob := firstOf(trail, "ApprovalGiven", func(e *audit.Entry) bool { return e.Identity == "bob-"+f.ns })
	rest := firstOf(trail, "WaveStarted", func(e *audit.Entry) bool { return e.Wave == "rest" })
	succeeded := firstOf(trail, "RolloutSucceeded", nil)
	require.True(t, started >= 0 && started < waiting && waiting < alice && alice < bob && bob < rest && rest < succeeded,
		"in order: started %d, waiting %d, alice %d, bob %d, rest started %d, succeeded %d", started, waiting, alice, bob, rest, succeeded)
	require.Equal(t, "kubernetes:alice-"+f.ns, trail[alice].Actor)
	require.Equal(t, done.Spec.Freight.Name, trail[bob].Freight)
	require.Equal(t, "rest", trail[bob].Wave)
	require.Equal(t, 1, len(slices.DeleteFunc(slices.Clone(trail), func(e audit.Entry) bool {
		return e.Action != "ApprovalGiven" || e.Identity != "alice-"+f.ns
	})), "alice's approval is recorded once")
}
