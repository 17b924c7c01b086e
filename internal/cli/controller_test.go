package cli

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_controllerOptions_namespaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "default: the Argo CD namespace", want: []string{"argocd"}},
		{name: "listed", args: []string{"--inventory-namespaces=gitops, inventory"}, want: []string{"gitops", "inventory"}},
		{name: "empty: only each FleetStage's own", args: []string{"--inventory-namespaces="}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := newControllerCommand(io.Discard, io.Discard)
			require.NoError(t, cmd.ParseFlags(tt.args))
			o := &controllerOptions{}
			var err error
			o.inventoryNS, err = cmd.Flags().GetStringSlice("inventory-namespaces")
			require.NoError(t, err)
			require.Equal(t, tt.want, o.namespaces())
		})
	}
}
