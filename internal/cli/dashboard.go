package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
)

// defaultDashboardAddress is where `kargo-fleet dashboard` listens: this
// machine only, since it serves with the viewer's own credentials.
const defaultDashboardAddress = "127.0.0.1:3100"

// dashboardOptions configures `kargo-fleet dashboard`.
type dashboardOptions struct {
	kube         kubeOptions
	address      string
	kargoURL     string
	allowedHosts []string

	streams genericiooptions.IOStreams
}

func newDashboardCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &dashboardOptions{kube: kube, streams: streams}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a read-only live web view of fleets on this machine",
		Long: "Serves a read-only web page showing every FleetStage (with -n, only that Project's: other " +
			"Projects are not served at all): the Freight each target runs, the " +
			"current rollout's waves with progress and thresholds, the approval it waits for, failures grouped " +
			"by reason, and a grid of every target. It reads with your own kubeconfig and RBAC, watches the " +
			"Projects being viewed, and pushes changes to open pages within a second or two.",
		Example: "  kargo-fleet dashboard\n  kargo-fleet dashboard -n shop --kargo-url https://kargo.example.com\n" +
			"  kubectl fleet dashboard --address 127.0.0.1:8080",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func (o *dashboardOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	f := cmd.Flags()
	f.Lookup("namespace").Usage = "Show only this Kargo Project (default: every namespace with a FleetStage you may list)."
	f.StringVar(&o.address, "address", defaultDashboardAddress, "Address to serve the dashboard on.")
	f.StringVar(&o.kargoURL, "kargo-url", "", "Kargo UI base URL: target details link to their Stage there.")
	f.StringArrayVar(&o.allowedHosts, "allowed-host", nil, "Also answer this Host header (host or host:port; "+
		"repeatable), e.g. the name of a proxy in front of the dashboard. The listen address and localhost are "+
		"always answered; any other Host is refused, so that another site's page cannot read through your "+
		"browser what your kubeconfig may read.")
}

func (o *dashboardOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.address); err != nil {
		return fmt.Errorf("--address %q: %w", o.address, err)
	}
	for _, h := range o.allowedHosts {
		if err := dashboard.ValidateAllowedHost(h); err != nil {
			return fmt.Errorf("--allowed-host %w", err)
		}
	}
	if o.kargoURL != "" {
		if _, ok := link.Base(o.kargoURL); !ok {
			return fmt.Errorf("--kargo-url %q: must be an http(s) URL", o.kargoURL)
		}
	}
	return nil
}

func (o *dashboardOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(o.streams.ErrOut)))
	cfg, _, err := o.kube.restConfig()
	if err != nil {
		return err
	}
	var namespaces []string
	if ns := o.kube.namespaceFlag(); ns != "" {
		namespaces = []string{ns}
	}
	srv, err := dashboard.New(ctx, dashboard.Options{Config: cfg, Scheme: cliScheme(), Namespaces: namespaces,
		KargoURL: o.kargoURL, AllowedHosts: o.allowedHosts, Log: ctrl.Log.WithName("dashboard")})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", o.address, err)
	}
	url := dashboard.URL(ln) + "/projects"
	if len(namespaces) == 1 {
		url = dashboard.URL(ln) + link.ProjectPath(namespaces[0])
	}
	fmt.Fprintf(o.streams.Out, "kargo-fleet dashboard (read-only) at %s\nPress Ctrl-C to stop it.\n", url)
	return srv.Serve(ctx, ln)
}
