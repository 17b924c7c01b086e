package cli

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

func TestControllerFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(*testing.T, *controllerOptions)
	}{
		{name: "zap flags the chart passes", args: []string{"--zap-log-level=debug", "--zap-encoder=json"},
			check: func(t *testing.T, o *controllerOptions) { require.NotNil(t, o.zap.Level) }},
		{name: "webhook bind address", args: []string{"--webhook-bind-address=127.0.0.1:19443"},
			check: func(t *testing.T, o *controllerOptions) {
				require.Equal(t, "127.0.0.1", o.webhookHost)
				require.Equal(t, 19443, o.webhookPort)
			}},
		{name: "webhook port alone", args: []string{"--webhook-port=9444"},
			check: func(t *testing.T, o *controllerOptions) { require.Equal(t, 9444, o.webhookPort) }},
		{name: "bad webhook bind address", args: []string{"--webhook-bind-address=9443"}, wantErr: "--webhook-bind-address"},
		{name: "bad webhook port", args: []string{"--webhook-bind-address=:http"}, wantErr: "invalid port"},
		{name: "generated certificates need webhooks", args: []string{"--webhook-cert-secret=x", "--webhooks=false"},
			wantErr: "--webhook-cert-secret"},
		{name: "generated certificates need a folder", args: []string{"--webhook-cert-secret=x"}, wantErr: "--webhook-cert-dir"},
		{name: "generated certificates", args: []string{"--webhook-cert-secret=x", "--webhook-cert-dir=/tmp/certs"},
			check: func(t *testing.T, o *controllerOptions) { require.Equal(t, "x", o.webhookCert.secret) }},
		{name: "generated metrics certificate needs a folder", args: []string{"--metrics-cert-secret=m"}, wantErr: "--metrics-cert-dir"},
		{name: "generated metrics certificate needs secure metrics",
			args: []string{"--metrics-cert-secret=m", "--metrics-cert-dir=/tmp/m", "--metrics-secure=false"}, wantErr: "--metrics-secure"},
		{name: "generated metrics certificate", args: []string{"--metrics-cert-secret=m", "--metrics-cert-dir=/tmp/m", "--metrics-service=svc"},
			check: func(t *testing.T, o *controllerOptions) {
				require.Equal(t, metricsCertOptions{dir: "/tmp/m", secret: "m", service: "svc"}, o.metricsCert)
			}},
		{name: "dashboard URL", args: []string{"--dashboard-url=https://fleet.example.com"},
			check: func(t *testing.T, o *controllerOptions) {
				require.Equal(t, "https://fleet.example.com", o.dashboardURL)
			}},
		{name: "dashboard URL must be http(s)", args: []string{"--dashboard-url=fleet.example.com"}, wantErr: "--dashboard-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := &controllerOptions{errOut: &bytes.Buffer{}}
			cmd := &cobra.Command{Use: "controller"}
			o.addFlags(cmd)
			err := cmd.Flags().Parse(tt.args)
			if err == nil {
				err = o.validate()
			}
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

func Test_listening(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := strconv.Itoa(closed.Addr().(*net.TCPAddr).Port)
	require.NoError(t, closed.Close())
	tests := []struct {
		name    string
		addr    string
		wantErr bool
	}{
		{name: "listening, explicit host", addr: "127.0.0.1:" + port},
		{name: "listening, every interface", addr: ":" + port},
		{name: "nothing listening", addr: "127.0.0.1:" + closedPort, wantErr: true},
		{name: "not an address", addr: "9090", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := listening(tt.addr, false)(nil)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
}

// Test_listeningTLS: on a TLS step server the check completes a handshake,
// so a probe every few seconds leaves no handshake error in the log.
func Test_listeningTLS(t *testing.T) {
	t.Parallel()
	var serverLog bytes.Buffer
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(&serverLog, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	require.NoError(t, listening(addr, true)(nil))
	require.NoError(t, listening(addr, true)(nil))
	time.Sleep(100 * time.Millisecond) // the server logs a failed handshake after the client left
	require.Empty(t, serverLog.String(), "no handshake error from the readiness check")
	require.Error(t, listening("127.0.0.1:1", true)(nil), "nothing listening")
}

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

func TestParseShardURLs(t *testing.T) {
	t.Parallel()
	got, err := parseShardURLs([]string{"eu=https://steps.eu.example:9090", "us=http://10.0.0.1"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"eu": "https://steps.eu.example:9090", "us": "http://10.0.0.1"}, got)
	for _, bad := range []string{"eu", "-eu=https://x", "eu=steps.eu.example", "eu=/path"} {
		_, err := parseShardURLs([]string{bad})
		require.Error(t, err, bad)
		require.ErrorContains(t, err, "--step-server-shard-urls", bad)
	}
}
