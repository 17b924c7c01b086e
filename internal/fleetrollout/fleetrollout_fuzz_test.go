package fleetrollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzParseStepKey: a step key parses only into a Promotion name and a
// non-empty alias, and StepKey writes back the value parsed; every key
// StepKey makes of a Promotion name parses back.
func FuzzParseStepKey(f *testing.F) {
	f.Add("prod-pilot.1.f2/fleet::start", "prod-pilot.1.f2", "fleet::start")
	f.Add("/fleet", "p", "a/b")
	f.Add("p/", "", "x")
	f.Add("no-slash", "UPPER", "x")
	f.Add("a/b/c", "a", "b/c")
	f.Fuzz(func(t *testing.T, value, promotion, alias string) {
		p, a, ok := ParseStepKey(value)
		if ok {
			require.Empty(t, validation.IsDNS1123Subdomain(p))
			require.NotEmpty(t, a)
			require.Equal(t, value, StepKey(p, a), "a parsed key writes back unchanged")
		} else {
			require.Empty(t, p+a)
		}
		p, a, ok = ParseStepKey(StepKey(promotion, alias))
		wantOK := len(validation.IsDNS1123Subdomain(promotion)) == 0 && alias != ""
		require.Equal(t, wantOK, ok)
		if ok {
			require.Equal(t, promotion, p)
			require.Equal(t, alias, a)
		}
	})
}

// FuzzCompare: the order of rollouts (creation, then the requested-at
// annotation, then the name; a rollback after what it undoes) is one
// order: it is antisymmetric, no two rollouts of different names tie, and
// requested-at decides only when both rollouts carry a readable one.
func FuzzCompare(f *testing.F) {
	f.Add("prod-a", "prod-b", "", "", int64(100), int64(100),
		"2026-11-23T10:00:00.5Z", "2026-11-23T10:00:00.25Z")
	f.Add("prod-a-rb", "prod-a", "prod-a", "", int64(100), int64(200), "", "")
	f.Add("x", "y", "y", "x", int64(5), int64(5), "bad", "2026-11-23T10:00:00Z")
	f.Add("same", "same", "same", "", int64(1), int64(2), "2026-11-23T10:00:00+01:00", "2026-11-23T09:00:00Z")
	f.Fuzz(func(t *testing.T, nameA, nameB, rbA, rbB string, createdA, createdB int64, reqA, reqB string) {
		mk := func(name, rb string, created int64, req string) *fleetv1alpha1.FleetRollout {
			return &fleetv1alpha1.FleetRollout{
				ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(created%(1<<40), 0)),
					Annotations: map[string]string{fleetv1alpha1.RequestedAtAnnotation: req}},
				Spec: fleetv1alpha1.FleetRolloutSpec{RollbackOf: rb},
			}
		}
		a, b := mk(nameA, rbA, createdA, reqA), mk(nameB, rbB, createdB, reqB)
		require.Zero(t, Compare(a, a))
		ab, ba := Compare(a, b), Compare(b, a)
		require.Equal(t, sign(ab), -sign(ba), "antisymmetric")
		if nameA != nameB {
			require.NotZero(t, ab, "rollouts of different names never tie")
		}
		if rbA != "" && rbA == nameB && rbB != nameA {
			require.Positive(t, ab, "a rollback comes after what it undoes")
		}
		ta, errA := time.Parse(time.RFC3339Nano, reqA)
		tb, errB := time.Parse(time.RFC3339Nano, reqB)
		byRequest := compareRequestedAt(a, b)
		require.Equal(t, -byRequest, compareRequestedAt(b, a))
		if errA != nil || errB != nil {
			require.Zero(t, byRequest, "an unreadable requested-at decides nothing")
		} else {
			require.Equal(t, ta.Compare(tb), byRequest)
			again := mk(nameA, rbA, createdA, ta.UTC().Format(time.RFC3339Nano))
			require.Zero(t, compareRequestedAt(a, again), "requested-at survives a round trip")
		}
	})
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
