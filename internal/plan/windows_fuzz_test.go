package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// fuzzEpoch and fuzzSpan keep fuzzed instants within 2000-2100, where cron's
// five-year search and time zone data are meaningful.
var (
	fuzzEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	fuzzSpan  = int64(100 * 365 * 24 * 3600)
)

// FuzzWindow compiles arbitrary windows and checks the window arithmetic on
// the valid ones: nothing panics, the search terminates, and an instant the
// search returns is one at which the window really allows changes.
func FuzzWindow(f *testing.F) {
	f.Add("0 9 * * 1-5", "Europe/Berlin", int64(8*60), int64(0), false)
	f.Add("0 0 20 12 *", "", int64(14*24*60), int64(400*24*3600), true)
	f.Add("*/15 2-4 * * *", "America/New_York", int64(10), int64(1_700_000_000), false)
	f.Add("30 2 * 3 0", "Europe/London", int64(60), int64(1_711_846_800), true) // around a DST switch
	f.Add("* * * * *", "UTC", int64(60), int64(5), true)                        // never closes
	f.Add("0 0 29 2 *", "Asia/Kolkata", int64(1), int64(12345), false)
	f.Add("0 0 30 2 *", "", int64(60), int64(0), false)
	f.Add("TZ=", "", int64(60), int64(0), false)
	f.Add("CRON_TZ=Europe/Paris 0 9 * * *", "", int64(60), int64(0), false)
	f.Add("@daily", "", int64(60), int64(0), false)
	f.Add("60 25 32 13 8", "Local", int64(-5), int64(-5), true)
	f.Add("1-5/0 * * * *", "", int64(60), int64(0), false)
	f.Fuzz(func(t *testing.T, schedule, tz string, minutes, offset int64, deny bool) {
		typ := fleetv1alpha1.WindowAllow
		if deny {
			typ = fleetv1alpha1.WindowDeny
		}
		spec := fleetv1alpha1.ChangeWindow{
			Name: "w", Type: typ, Schedule: schedule, TimeZone: tz,
			Duration: metav1.Duration{Duration: time.Duration(minutes%(1<<40)) * time.Minute},
		}
		policy, errs := CompilePolicy(&fleetv1alpha1.FleetPolicy{Windows: []fleetv1alpha1.ChangeWindow{spec}},
			field.NewPath("spec", "policy"))
		if len(errs) > 0 {
			require.Nil(t, policy)
			for _, e := range errs {
				require.Contains(t, e.Field, "spec.policy.windows[0].")
			}
			return
		}
		if offset < 0 {
			offset = -offset
		}
		now := time.Unix(fuzzEpoch+offset%fuzzSpan, 0).UTC()
		ws := &policy.windows
		w := ws.windows[0]
		open := w.openAt(now)
		if open {
			budget := windowSearchBudget
			require.False(t, w.closesAt(now, &budget).Before(now), "an open window closes after now")
		} else if next := w.opensAt(now); !next.IsZero() {
			require.True(t, next.After(now))
			require.True(t, w.openAt(next), "a window is open at its activation")
		}
		at, ok := ws.nextAllowed(1, now)
		allowedNow := ws.allowed(1, ws.openBits(now))
		if allowedNow {
			require.True(t, ok)
			require.Equal(t, now, at)
		}
		if ok {
			require.False(t, at.Before(now))
			require.True(t, ws.allowed(1, ws.openBits(at)), "the instant found allows changes")
		}
	})
}
