package steps

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestPlanWindows_CheckWindows(t *testing.T) {
	t.Parallel()
	// Changes allowed on weekdays 09:00-17:00 UTC.
	business := fleetv1alpha1.ChangeWindow{
		Name: "business-hours", Type: fleetv1alpha1.WindowAllow, Schedule: "0 9 * * 1-5",
		Duration: metav1.Duration{Duration: 8 * time.Hour},
	}
	tests := []struct {
		name     string
		windows  []fleetv1alpha1.ChangeWindow
		now      time.Time
		wantOpen bool
		wantNext time.Time
		wantErr  string
	}{
		{name: "no windows", now: time.Date(2026, 8, 1, 3, 0, 0, 0, time.UTC), wantOpen: true},
		{
			name: "inside", windows: []fleetv1alpha1.ChangeWindow{business},
			now: time.Date(2026, 8, 3, 10, 0, 0, 0, time.UTC), wantOpen: true,
		},
		{
			name: "saturday", windows: []fleetv1alpha1.ChangeWindow{business},
			now:      time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC),
			wantNext: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC),
		},
		{
			name: "invalid schedule",
			windows: []fleetv1alpha1.ChangeWindow{{Name: "x", Type: fleetv1alpha1.WindowAllow, Schedule: "every day",
				Duration: metav1.Duration{Duration: time.Hour}}},
			now: time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC), wantErr: "spec.policy.windows[0].schedule",
		},
	}
	w := NewPlanWindows()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := testFleetStage()
			fs.UID = ""
			fs.Spec.Policy.Windows = tt.windows
			got, err := w.CheckWindows(fs, tt.now)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, IsTerminal(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantOpen, got.Open)
			require.True(t, tt.wantNext.Equal(got.NextOpen), "next %s, want %s", got.NextOpen, tt.wantNext)
		})
	}

	t.Run("compiled once per generation", func(t *testing.T) {
		t.Parallel()
		w := NewPlanWindows()
		fs := testFleetStage()
		fs.Generation = 1
		fs.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{business}
		_, err := w.CheckWindows(fs, time.Now())
		require.NoError(t, err)
		first := w.policies[fs.UID].policy
		_, err = w.CheckWindows(fs, time.Now())
		require.NoError(t, err)
		require.Same(t, first, w.policies[fs.UID].policy)
		fs.Generation = 2
		_, err = w.CheckWindows(fs, time.Now())
		require.NoError(t, err)
		require.NotSame(t, first, w.policies[fs.UID].policy)
	})
}
