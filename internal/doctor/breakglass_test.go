package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// grants answers access reviews from a set of users allowed everything
// asked, and records what was asked.
type grants struct {
	allowed map[string]bool
	asked   []authorizationv1.ResourceAttributes
}

func (g *grants) Allowed(_ context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	g.asked = append(g.asked, attrs)
	return g.allowed[user.Username], nil
}

func TestCheckBreakGlassGrants(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	for _, tc := range []struct {
		name       string
		access     AccessReviewer
		kargoNS    string
		wantStatus Status
		wantIn     string
	}{
		{name: "no grant", access: &grants{}, wantStatus: StatusOK, wantIn: "no Kargo control plane identity holds break-glass"},
		{name: "Kargo's API server was granted the verb", access: &grants{allowed: map[string]bool{
			"system:serviceaccount:kargo:kargo-api": true}}, wantStatus: StatusWarn, wantIn: "system:serviceaccount:kargo:kargo-api"},
		{name: "in Kargo's own namespace", kargoNS: "kargo-system", access: &grants{allowed: map[string]bool{
			"system:serviceaccount:kargo-system:kargo-controller": true}}, wantStatus: StatusWarn,
			wantIn: "system:serviceaccount:kargo-system:kargo-controller"},
		{name: "no reviewer: not checked", wantStatus: StatusOK, wantIn: "not checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := New(nil, Options{Access: tc.access, KargoNamespace: tc.kargoNS})
			got := d.checkBreakGlassGrants(context.Background(), fs)
			require.Equal(t, CheckBreakGlass, got.Check)
			require.Equal(t, tc.wantStatus, got.Status, got.Message)
			require.Contains(t, got.Message, tc.wantIn)
			if g, ok := tc.access.(*grants); ok {
				for _, a := range g.asked {
					require.Equal(t, "break-glass", a.Verb)
					require.Equal(t, "fleetstages", a.Resource)
					require.Equal(t, "prod", a.Name)
					require.True(t, strings.HasPrefix(a.Group, "fleet."))
				}
			}
		})
	}
}
