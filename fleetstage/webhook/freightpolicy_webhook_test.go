package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig/imagesigtest"
)

func TestFreightPolicyValidator_signatures(t *testing.T) {
	t.Parallel()
	_, key := imagesigtest.NewSigner(t)
	policy := func(publicKey string) *fleetv1alpha1.FreightPolicy {
		p := &fleetv1alpha1.FreightPolicy{Spec: fleetv1alpha1.FreightPolicySpec{Rules: []fleetv1alpha1.FreightRule{
			{Name: "signed", Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: publicKey}}}}}
		p.Name = "signed"
		return p
	}
	for _, tc := range []struct {
		name    string
		key     string
		wantErr string
	}{
		{name: "a PEM public key", key: key},
		{name: "not a key", key: "cosign.pub", wantErr: "spec.rules[0].signatures.publicKey"},
		{name: "a truncated key", key: key[:60], wantErr: "spec.rules[0].signatures.publicKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := FreightPolicyValidator{}.ValidateCreate(context.Background(), policy(tc.key))
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
