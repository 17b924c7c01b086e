package kargo

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func TestAuthorizedStages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		want    []types.NamespacedName
		wantErr string
	}{
		{name: "one entry", value: "shop:prod.eu-1", want: []types.NamespacedName{{Namespace: "shop", Name: "prod.eu-1"}}},
		{name: "list with blanks and empty entries", value: " shop : a ,, shop:b ,",
			want: []types.NamespacedName{{Namespace: "shop", Name: "a"}, {Namespace: "shop", Name: "b"}}},
		{name: "glob stage refused", value: "shop:prod.*", wantErr: "deprecated glob expressions are no longer supported"},
		{name: "glob project refused", value: "*:prod", wantErr: "deprecated glob expressions are no longer supported"},
		{name: "no colon", value: "prod", wantErr: `invalid authorized Stage "prod": expected format "<project>:<stage>"`},
		{name: "empty stage", value: "shop:", wantErr: "expected format"},
		{name: "nothing", value: " , ", wantErr: `no authorized Stages found in " , "`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := AuthorizedStages(tt.value)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAuthorizeStage(t *testing.T) {
	t.Parallel()
	app := types.NamespacedName{Namespace: "argocd", Name: "guestbook-eu-1"}
	tests := []struct {
		name        string
		annotations map[string]string
		wantErr     string
	}{
		{name: "exact entry", annotations: map[string]string{AuthorizedStageAnnotation: "shop:prod.eu-1"}},
		{name: "one of several", annotations: map[string]string{AuthorizedStageAnnotation: "shop:prod-pilot, shop:prod.eu-1"}},
		{name: "missing", wantErr: `Argo CD Application "guestbook-eu-1" in namespace "argocd" does not permit mutation by Kargo Stage prod.eu-1 in namespace shop`},
		{name: "other Stage", annotations: map[string]string{AuthorizedStageAnnotation: "shop:prod.eu-2"}, wantErr: "does not permit mutation"},
		{name: "other project", annotations: map[string]string{AuthorizedStageAnnotation: "bar:prod.eu-1"}, wantErr: "does not permit mutation"},
		{name: "prefix is no match", annotations: map[string]string{AuthorizedStageAnnotation: "shop:prod.eu"}, wantErr: "does not permit mutation"},
		{name: "glob", annotations: map[string]string{AuthorizedStageAnnotation: "shop:prod.*"},
			wantErr: `unable to parse value of annotation "kargo.akuity.io/authorized-stage" ("shop:prod.*")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := AuthorizeStage(tt.annotations, app, "shop", "prod.eu-1")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
}
