package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDashboardCommand_validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "bad address", args: []string{"--address", "3100"}, wantErr: `--address "3100": address 3100: missing port in address`},
		{name: "bad Kargo URL", args: []string{"--kargo-url", "kargo.example.com"},
			wantErr: `--kargo-url "kargo.example.com": must be an http(s) URL`},
		{name: "allowed host with a scheme", args: []string{"--allowed-host", "https://fleet.example.com"},
			wantErr: `--allowed-host "https://fleet.example.com": want a host name or IP address, optionally with :port (no scheme or path)`},
		{name: "allowed host with a bad port", args: []string{"--allowed-host", "fleet.example.com:0"},
			wantErr: `--allowed-host "fleet.example.com:0": the port must be a number from 1 to 65535`},
		{name: "arguments", args: []string{"prod"}, wantErr: `unknown command "prod" for "dashboard"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			_, err := execute(newDashboardCommand(testStreams(&out), kubeOptions{}), &out, tt.args...)
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestRootCommand_hasDashboard(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd, _, err := NewRootCommand(&out, &out).Find([]string{"dashboard"})
	require.NoError(t, err)
	require.Equal(t, "dashboard", cmd.Name())
	require.Equal(t, defaultDashboardAddress, cmd.Flags().Lookup("address").DefValue)
}
