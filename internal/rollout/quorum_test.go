package rollout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func approval(user string, groups ...string) Approval {
	return Approval{User: user, Groups: groups, At: metav1.NewTime(now)}
}

func TestJudgeQuorum(t *testing.T) {
	two := &fleetv1alpha1.WaveApprovals{Count: 2}
	sre := &fleetv1alpha1.WaveApprovals{Count: 2, Groups: []string{"sre"}}
	for _, tc := range []struct {
		name      string
		policy    *fleetv1alpha1.WaveApprovals
		starter   string
		approvals []Approval
		met       bool
		text      string
	}{
		{name: "none yet", policy: two, text: "0 of 2 approvals; 2 more"},
		{name: "one", policy: two, approvals: []Approval{approval("alice")}, text: "1 of 2 approvals (alice); one more"},
		{name: "two people", policy: two, approvals: []Approval{approval("alice"), approval("bob")}, met: true,
			text: "2 of 2 approvals (alice, bob)"},
		{name: "the same person twice counts once", policy: two, approvals: []Approval{approval("alice"), approval("alice")},
			text: "1 of 2 approvals (alice); one more"},
		{name: "the starter does not count", policy: two, starter: "kubernetes:alice",
			approvals: []Approval{approval("alice"), approval("bob")}, text: "1 of 2 approvals (bob); one more"},
		{name: "unless the policy says so", policy: &fleetv1alpha1.WaveApprovals{Count: 2, StarterCounts: true}, starter: "alice",
			approvals: []Approval{approval("alice"), approval("bob")}, met: true},
		{name: "only the groups named", policy: sre, approvals: []Approval{approval("alice", "dev"), approval("bob", "sre", "dev")},
			text: "1 of 2 approvals (bob); one more from group sre"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := JudgeQuorum(tc.policy, tc.starter, tc.approvals)
			require.Equal(t, tc.met, q.Met())
			if tc.text != "" {
				require.Equal(t, tc.text, q.String())
			}
		})
	}
}

func TestCheckApprovalChange(t *testing.T) {
	alice := approval("alice", "dev")
	for _, tc := range []struct {
		name          string
		before, after []Approval
		user          string
		groups        []string
		err           string
	}{
		{name: "the first approval", after: []Approval{alice}, user: "alice", groups: []string{"dev"}},
		{name: "a second person", before: []Approval{alice}, after: []Approval{alice, approval("bob", "a", "b")}, user: "bob",
			groups: []string{"b", "a"}},
		{name: "for someone else", after: []Approval{approval("bob")}, user: "alice", err: `names the user who gives it: "alice"`},
		{name: "with groups not theirs", after: []Approval{approval("alice", "sre")}, user: "alice", groups: []string{"dev"},
			err: "the groups the API server authenticated"},
		{name: "twice", before: []Approval{alice}, after: []Approval{alice, alice}, user: "alice", groups: []string{"dev"},
			err: "never counts twice"},
		{name: "taken back", before: []Approval{alice}, user: "alice", err: "one at a time"},
		{name: "rewritten", before: []Approval{alice}, after: []Approval{approval("carol"), approval("bob")}, user: "bob",
			err: "never changed or taken back"},
		{name: "undated", after: []Approval{{User: "alice"}}, user: "alice", err: "says when"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckApprovalChange(tc.before, tc.after, tc.user, tc.groups)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestAWaveWaitsForItsQuorum(t *testing.T) {
	o := observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"))
	o.Quorums = map[string]Quorum{"canary": JudgeQuorum(&fleetv1alpha1.WaveApprovals{Count: 2}, "", []Approval{approval("alice")})}
	d := Decide(o)
	require.Empty(t, d.Start)
	require.Equal(t, fleetv1alpha1.RolloutWaitingForApproval, d.Phase)
	require.Equal(t, "waiting for approval: 1 of 2 approvals (alice); one more: kargo-fleet approve prod -n shop --wave canary",
		d.Waves[1].Waiting)
	o.Quorums["canary"] = JudgeQuorum(&fleetv1alpha1.WaveApprovals{Count: 2}, "", []Approval{approval("alice"), approval("bob")})
	d = Decide(o)
	require.NotEmpty(t, d.Start, "the quorum is met: the wave starts")
	require.True(t, strings.HasPrefix(d.Start[0].Target.ID, "canary-"))
}
