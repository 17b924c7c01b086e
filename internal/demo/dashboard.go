package demo

import (
	"context"
	"fmt"
	"net"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// DefaultDashboard is where the demo serves the dashboard.
const DefaultDashboard = "127.0.0.1:3100"

// demoDashboard is `kargo-fleet dashboard` served beside the story. Its
// port is taken before the story starts, so its URL is printed first; it
// serves once the control plane is up and reads it as its administrator.
// A nil *demoDashboard does nothing.
type demoDashboard struct {
	ln     net.Listener
	url    string
	cancel context.CancelFunc
	done   chan error
}

// listenDashboard takes the address, or any free port when it is taken.
func listenDashboard(addr string) *demoDashboard {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return &demoDashboard{}
		}
	}
	return &demoDashboard{ln: ln, url: link.FleetStageURL(dashboard.URL(ln), Project, FleetStageName)}
}

func (d *demoDashboard) serve(env *fleetenv.Env) error {
	if d == nil || d.ln == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := dashboard.New(ctx, dashboard.Options{Config: env.Config, Scheme: env.Scheme,
		Namespaces: []string{Project}, Log: ctrl.Log.WithName("dashboard")})
	if err != nil {
		cancel()
		return fmt.Errorf("error starting the dashboard: %w", err)
	}
	d.cancel, d.done = cancel, make(chan error, 1)
	go func() { d.done <- srv.Serve(ctx, d.ln) }()
	return nil
}

// stop stops serving and waits until the server is down.
func (d *demoDashboard) stop() {
	switch {
	case d == nil || d.ln == nil:
	case d.cancel == nil:
		_ = d.ln.Close()
	default:
		d.cancel()
		if err := <-d.done; err != nil {
			ctrl.Log.WithName("dashboard").Error(err, "Dashboard stopped with an error")
		}
	}
}
