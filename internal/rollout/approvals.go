package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// ApproveVerb is the custom RBAC verb on fleetstages that lets a user
// approve a wave of that fleet's rollouts (kargo-fleet approve).
const ApproveVerb = "approve"

// ApproveCommand is the command that gives one's approval to a wave that
// needs several people's.
func ApproveCommand(fleetStage, namespace, wave string) string {
	return fmt.Sprintf("kargo-fleet approve %s -n %s --wave %s", fleetStage, namespace, wave)
}

// Approval is one person's approval of a wave of a rollout, as the
// API server authenticated them when they gave it.
type Approval struct {
	User   string      `json:"user"`
	Groups []string    `json:"groups,omitempty"`
	At     metav1.Time `json:"at"`
}

// ApprovalsOf reads a wave's approvals from a rollout; an unreadable
// annotation reads as none (the webhook never admits one).
func ApprovalsOf(ro *fleetv1alpha1.FleetRollout, wave string) []Approval {
	raw, ok := ro.Annotations[fleetv1alpha1.ApprovalsAnnotationPrefix+wave]
	if !ok {
		return nil
	}
	var out []Approval
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil
	}
	return out
}

// EncodeApprovals is the annotation value of approvals.
func EncodeApprovals(approvals []Approval) string {
	b, _ := json.Marshal(approvals) // a list of plain structs always encodes
	return string(b)
}

// Quorum is where a wave's N-person approval stands.
type Quorum struct {
	// Required is the number of distinct people needed.
	Required int
	// Counted are the approvers that count, in the order they approved.
	Counted []string
	// Groups, when set, are the groups an approver must belong to.
	Groups []string
}

// Met says enough people approved.
func (q Quorum) Met() bool { return len(q.Counted) >= q.Required }

// String reads "1 of 2 approvals (alice); one more from group sre".
func (q Quorum) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d approvals", min(len(q.Counted), q.Required), q.Required)
	if len(q.Counted) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(q.Counted, ", "))
	}
	missing := q.Required - len(q.Counted)
	if missing <= 0 {
		return b.String()
	}
	more := "one more"
	if missing > 1 {
		more = fmt.Sprintf("%d more", missing)
	}
	from := ""
	switch len(q.Groups) {
	case 0:
	case 1:
		from = " from group " + q.Groups[0]
	default:
		from = " from groups " + strings.Join(q.Groups, ", ")
	}
	fmt.Fprintf(&b, "; %s%s", more, from)
	return b.String()
}

// JudgeQuorum counts a wave's approvals: each person once, only those in
// one of the policy's groups when it names any, and the rollout's starter
// only when the policy says so.
func JudgeQuorum(policy *fleetv1alpha1.WaveApprovals, starter string, approvals []Approval) Quorum {
	q := Quorum{Required: int(policy.Count), Groups: policy.Groups}
	for _, a := range approvals {
		switch {
		case slices.Contains(q.Counted, a.User):
		case !policy.StarterCounts && samePerson(a.User, starter):
		case len(policy.Groups) > 0 && !slices.ContainsFunc(a.Groups, func(g string) bool { return slices.Contains(policy.Groups, g) }):
		default:
			q.Counted = append(q.Counted, a.User)
		}
	}
	return q
}

// samePerson says a Kubernetes user name and a rollout's actor (as Kargo
// names actors: "kubernetes:<user>", or the user name itself) are one
// person.
func samePerson(user, actor string) bool {
	return user != "" && (actor == user || actor == "kubernetes:"+user)
}

// CheckApprovalChange admits a change of a wave's approvals only when it
// appends exactly one approval by the requesting user, with the groups the
// API server authenticated, who had not approved the wave yet. Approvals
// are never edited or taken back: a rollout approved by mistake is paused
// or aborted instead.
func CheckApprovalChange(before, after []Approval, user string, groups []string) error {
	if len(after) != len(before)+1 {
		return fmt.Errorf("approvals are appended one at a time (%d before, %d after)", len(before), len(after))
	}
	for i := range before {
		if before[i].User != after[i].User || !slices.Equal(before[i].Groups, after[i].Groups) || !before[i].At.Equal(&after[i].At) {
			return errors.New("an approval given is never changed or taken back")
		}
	}
	added := after[len(after)-1]
	switch {
	case added.User != user:
		return fmt.Errorf("an approval names the user who gives it: %q, not %q", user, added.User)
	case !slices.Equal(sortedCopy(added.Groups), sortedCopy(groups)):
		return fmt.Errorf("an approval carries the groups the API server authenticated %q with: %v", user, sortedCopy(groups))
	case added.At.IsZero():
		return errors.New("an approval says when it was given")
	}
	for _, a := range before {
		if a.User == user {
			return fmt.Errorf("%q approved this wave already: the same person never counts twice", user)
		}
	}
	return nil
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
