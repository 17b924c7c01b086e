package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// mustPolicy compiles windows and constraints into a policy.
func mustPolicy(t testing.TB, windows []fleetv1alpha1.ChangeWindow, constraints ...fleetv1alpha1.ConcurrencyConstraint) *CompiledPolicy {
	t.Helper()
	p, errs := CompilePolicy(&fleetv1alpha1.FleetPolicy{Windows: windows, Constraints: constraints}, field.NewPath("spec", "policy"))
	require.Empty(t, errs)
	return p
}

func window(name string, typ fleetv1alpha1.WindowType, schedule string, d time.Duration, tz string) fleetv1alpha1.ChangeWindow {
	return fleetv1alpha1.ChangeWindow{Name: name, Type: typ, Schedule: schedule,
		Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCompiledWindow_openAt(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, []fleetv1alpha1.ChangeWindow{
		window("business-hours", fleetv1alpha1.WindowAllow, "0 9 * * 1-5", 8*time.Hour, "Europe/Berlin"),
	})
	w := p.windows.windows[0]
	tests := []struct {
		name string
		now  string
		want bool
	}{
		// 2026-03-02 is a Monday; Berlin is UTC+1 in winter.
		{name: "opening instant is open", now: "2026-03-02T08:00:00Z", want: true},
		{name: "inside", now: "2026-03-02T12:30:00Z", want: true},
		{name: "closing instant is closed", now: "2026-03-02T16:00:00Z", want: false},
		{name: "before opening", now: "2026-03-02T07:59:59Z", want: false},
		{name: "weekend", now: "2026-03-07T10:00:00Z", want: false},
		// 2026-03-30 is a Monday after the switch to summer time (UTC+2).
		{name: "summer time shifts UTC hours", now: "2026-03-30T07:00:00Z", want: true},
		{name: "summer time closes earlier in UTC", now: "2026-03-30T15:00:00Z", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, w.openAt(at(tt.now)))
		})
	}
}

func TestCompiledPolicy_NextAllowed(t *testing.T) {
	t.Parallel()
	business := window("business-hours", fleetv1alpha1.WindowAllow, "0 9 * * 1-5", 8*time.Hour, "Europe/Berlin")
	freeze := window("freeze", fleetv1alpha1.WindowDeny, "0 0 20 12 *", 14*24*time.Hour, "")
	lunch := window("lunch", fleetv1alpha1.WindowDeny, "0 12 * * *", time.Hour, "Europe/Berlin")
	euOnly := window("eu-nights", fleetv1alpha1.WindowAllow, "0 22 * * *", 6*time.Hour, "")
	euOnly.Selector = selectorOf("region=eu")
	everyMinute := window("always", fleetv1alpha1.WindowDeny, "* * * * *", time.Hour, "")
	tests := []struct {
		name    string
		windows []fleetv1alpha1.ChangeWindow
		target  Target
		now     string
		want    string
		wantOK  bool
	}{
		{name: "no windows", now: "2026-03-07T10:00:00Z", want: "2026-03-07T10:00:00Z", wantOK: true},
		{name: "allow window open", windows: []fleetv1alpha1.ChangeWindow{business},
			now: "2026-03-02T10:00:00Z", want: "2026-03-02T10:00:00Z", wantOK: true},
		{name: "allow window closed waits for Monday", windows: []fleetv1alpha1.ChangeWindow{business},
			now: "2026-03-07T10:00:00Z", want: "2026-03-09T08:00:00Z", wantOK: true},
		{name: "deny wins over allow and allow resumes after", windows: []fleetv1alpha1.ChangeWindow{business, lunch},
			now: "2026-03-02T11:15:00Z", want: "2026-03-02T12:00:00Z", wantOK: true},
		{name: "freeze spans the new year", windows: []fleetv1alpha1.ChangeWindow{business, freeze},
			now: "2026-12-21T10:00:00Z", want: "2027-01-04T08:00:00Z", wantOK: true},
		{name: "window selector does not apply", windows: []fleetv1alpha1.ChangeWindow{euOnly},
			target: makeTarget("us", "region=us"), now: "2026-03-02T10:00:00Z", want: "2026-03-02T10:00:00Z", wantOK: true},
		{name: "window selector applies", windows: []fleetv1alpha1.ChangeWindow{euOnly},
			target: makeTarget("eu", "region=eu"), now: "2026-03-02T10:00:00Z", want: "2026-03-02T22:00:00Z", wantOK: true},
		{name: "a deny window that never closes", windows: []fleetv1alpha1.ChangeWindow{everyMinute},
			now: "2026-03-02T10:00:00Z", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustPolicy(t, tt.windows)
			got, ok := p.NextAllowed(&tt.target, at(tt.now))
			require.Equal(t, tt.wantOK, ok)
			if tt.wantOK {
				require.Equal(t, at(tt.want).UTC(), got.UTC())
			}
		})
	}
	var nilPolicy *CompiledPolicy
	got, ok := nilPolicy.NextAllowed(&Target{}, at("2026-03-02T10:00:00Z"))
	require.True(t, ok)
	require.Equal(t, at("2026-03-02T10:00:00Z"), got)
}

func TestCompiledWindow_closesAtMergesActivations(t *testing.T) {
	t.Parallel()
	// Hourly activations of 90 minutes overlap: the window is open from 08:00
	// to 12:30 when the last activation is at 11:00.
	p := mustPolicy(t, []fleetv1alpha1.ChangeWindow{
		window("overlap", fleetv1alpha1.WindowDeny, "0 8-11 * * *", 90*time.Minute, ""),
	})
	budget := windowSearchBudget
	require.Equal(t, at("2026-03-02T12:30:00Z"), p.windows.windows[0].closesAt(at("2026-03-02T09:10:00Z"), &budget).UTC())
}
