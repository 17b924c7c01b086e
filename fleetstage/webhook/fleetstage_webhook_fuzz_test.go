package webhook

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// FuzzValidate runs the FleetStage webhook's validation on arbitrary specs
// (any JSON the API server could store past a broken schema): nothing
// panics, and a refusal is an Invalid error whose causes all name a field
// under spec.
func FuzzValidate(f *testing.F) {
	seeds := []*fleetv1alpha1.FleetStage{
		prodFleet(),
		testutil.MakeFleetStage("shop", "inline").InlineStage("w", `{"spec":{"steps":[{"uses":"http"}]}}`).Obj(),
		testutil.MakeFleetStage("shop", "prod").FromStage("prod-all").Obj(),
		testutil.MakeFleetStage("shop", "prod").Waves(
			fleetv1alpha1.Wave{Name: "a", Count: testutil.Int(2), MaxFailures: testutil.Int(2),
				Soak: &metav1.Duration{Duration: 876000 * time.Hour}, ProgressDeadline: &metav1.Duration{Duration: 1}},
			fleetv1alpha1.Wave{Name: "b", Expression: `labels.tier == "gold"`, MaxFailures: testutil.Percent("100%")},
		).InlineTargets(fleetv1alpha1.InlineTarget{Name: "x", Params: map[string]string{"p": "${{ secret('s') }}"}}).Obj(),
	}
	for _, fs := range seeds {
		raw, err := json.Marshal(fs)
		require.NoError(f, err)
		f.Add(raw)
	}
	f.Add([]byte(`{"metadata":{"name":"x"},"spec":{"stage":{"inline":{"requestedFreight":[{"sources":{}}],"promotionTemplate":null}}}}`))
	f.Add([]byte(`{"spec":{"waves":[{"name":"a","count":"200%","maxFailures":-1}],"targets":{"sources":[{"kind":"Inline","inline":[{"name":""}]}]}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fs := &fleetv1alpha1.FleetStage{}
		if json.Unmarshal(raw, fs) != nil {
			return
		}
		_ = Warnings(fs)
		err := Validate(fs)
		if err == nil {
			return
		}
		var status *apierrors.StatusError
		require.ErrorAs(t, err, &status)
		require.True(t, apierrors.IsInvalid(err))
		for _, c := range status.ErrStatus.Details.Causes {
			require.True(t, strings.HasPrefix(c.Field, "spec"), "cause %q names no spec field", c.Field)
		}
	})
}

// FuzzValidateRollout runs the FleetRollout checks on arbitrary names.
func FuzzValidateRollout(f *testing.F) {
	f.Add("prod", "0123456789abcdef0123456789abcdef01234567", "Forward", "", "r1")
	f.Add("other/prod", "../x", "Rollback", "r1", "r1")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, fleetStage, freight, direction, rollbackOf, name string) {
		ro := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: fleetStage, Freight: fleetv1alpha1.FreightReference{Name: freight},
				Direction: fleetv1alpha1.RolloutDirection(direction), RollbackOf: rollbackOf}}
		errs := ValidateRollout(ro)
		if len(errs) == 0 {
			require.NotContains(t, fleetStage, "/")
			require.NotContains(t, freight, "/")
			require.NotEmpty(t, freight)
			if direction == string(fleetv1alpha1.DirectionRollback) {
				require.NotEqual(t, name, rollbackOf)
			}
		}
	})
}
