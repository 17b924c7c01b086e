package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// Output formats of `kargo-fleet status`.
const (
	outputText = "text"
	outputJSON = "json"
)

// Colour modes of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// statusOptions configures `kargo-fleet status`.
type statusOptions struct {
	kube       kubeOptions
	fleetStage string
	output     string
	all        bool
	ascii      bool
	color      string
	watch      bool
	interval   time.Duration
	barWidth   int
	// dashboardURL is the dashboard's base URL; when set, the FleetStage's
	// dashboard link is printed under the report.
	dashboardURL string

	out   io.Writer
	clock clock.WithTicker
	// tty says whether out is a terminal (colour and in-place redraw);
	// width is its width (0: unknown).
	tty   bool
	width int
}

func newStatusCommand(out io.Writer, kube kubeOptions, clk clock.WithTicker) *cobra.Command {
	o := &statusOptions{kube: kube, out: out, clock: clk, tty: report.IsTerminal(out), width: terminalWidth(out)}
	cmd := &cobra.Command{
		Use:   "status [FLEETSTAGE]",
		Short: "Show a fleet: targets, versions, and each wave's progress",
		Long: "Shows a FleetStage and its current and last FleetRollouts: target counts, how many targets run " +
			"which Freight, a progress bar per wave (succeeded, failed, in flight, pending) with the reason a " +
			"wave waits, and failed targets grouped by reason. FLEETSTAGE may be left out when the Project has " +
			"only one.",
		Example: "  kargo-fleet status prod -n shop\n  kargo-fleet status -n shop -o json\n  kubectl fleet status prod -n shop --watch",
		Args:    cobra.MaximumNArgs(1),
		RunE:    fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *statusOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", outputText, "Output format: text or json.")
	f.BoolVar(&o.all, "all", false, "Show every FleetRollout of the FleetStage, not only the current and last ones.")
	f.BoolVar(&o.ascii, "ascii", false, "Draw progress bars with ASCII characters only.")
	f.StringVar(&o.color, "color", colorAuto, "Colour the output: auto (on a terminal, unless NO_COLOR is set), always or never.")
	f.BoolVarP(&o.watch, "watch", "w", false, "Keep showing the status, redrawn every --interval, until interrupted.")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "Time between two redraws with --watch.")
	f.IntVar(&o.barWidth, "bar-width", report.DefaultBarWidth, "Width of the progress bars, in characters.")
	f.StringVar(&o.dashboardURL, "dashboard-url", os.Getenv(link.DashboardURLEnv),
		"Base URL of `kargo-fleet dashboard`: the FleetStage's page there is printed under the report (default: $"+
			link.DashboardURLEnv+").")
}

func (o *statusOptions) validate() error {
	switch o.output {
	case outputText, outputJSON:
	default:
		return fmt.Errorf("--output %q: use text or json", o.output)
	}
	switch o.color {
	case colorAuto, colorAlways, colorNever:
	default:
		return fmt.Errorf("--color %q: use auto, always or never", o.color)
	}
	if o.watch && o.interval < 100*time.Millisecond {
		return fmt.Errorf("--interval must be at least 100ms")
	}
	if o.barWidth < 5 || o.barWidth > 200 {
		return fmt.Errorf("--bar-width must be between 5 and 200")
	}
	if _, ok := link.Base(o.dashboardURL); o.dashboardURL != "" && !ok {
		return fmt.Errorf("--dashboard-url %q: must be an http(s) URL", o.dashboardURL)
	}
	return nil
}

func (o *statusOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, ns, err := o.kube.connect()
	if err != nil {
		return err
	}
	if !o.watch {
		frame, err := o.render(ctx, c, ns)
		if err != nil {
			return err
		}
		_, err = o.out.Write(frame)
		return err
	}
	live := report.NewLive(o.out, o.tty && o.output == outputText).WithWidth(o.width)
	ticker := o.clock.NewTicker(o.interval)
	defer ticker.Stop()
	for {
		frame, err := o.render(ctx, c, ns)
		if err != nil {
			return err
		}
		if err := live.Draw(string(frame)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// render reads the FleetStage and its rollouts and renders them.
func (o *statusOptions) render(ctx context.Context, c client.Client, ns string) ([]byte, error) {
	fs, err := getFleetStage(ctx, c, ns, o.fleetStage)
	if err != nil {
		return nil, err
	}
	all, err := listRollouts(ctx, c, fs)
	if err != nil {
		return nil, err
	}
	rollouts := all
	if !o.all {
		rollouts = report.Relevant(fs, all)
	}
	r := report.Build(report.Input{FleetStage: fs, Rollouts: rollouts, Aliases: freightAliases(ctx, c, fs, rollouts),
		Recovery: recoveryOf(fs, all)})
	var buf bytes.Buffer
	if o.output == outputJSON {
		err = report.RenderJSON(&buf, r)
	} else {
		err = report.RenderText(&buf, r, report.TextOptions{
			Now: o.clock.Now(), BarWidth: o.barWidth, ASCII: o.ascii, Color: o.useColor(), Width: o.width,
		})
		if u := link.FleetStageURL(o.dashboardURL, fs.Namespace, fs.Name); u != "" && err == nil {
			fmt.Fprintf(&buf, "\nDashboard: %s\n", u)
		}
	}
	return buf.Bytes(), err
}

func (o *statusOptions) useColor() bool {
	switch o.color {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return o.tty && os.Getenv("NO_COLOR") == ""
}

// freightAliases looks up the aliases of the Freight the report names. A
// Freight that cannot be read is shown by name only.
func freightAliases(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage,
	rollouts []fleetv1alpha1.FleetRollout) map[string]string {
	names := map[string]bool{}
	for _, v := range fs.Status.Versions {
		names[v.Freight] = true
	}
	if fs.Status.LastGoodFreight != nil {
		names[fs.Status.LastGoodFreight.Name] = true
	}
	for i := range rollouts {
		names[rollouts[i].Spec.Freight.Name] = true
	}
	aliases := map[string]string{}
	for name := range names {
		var f kargo.Freight
		if name == "" || name == "other" {
			continue
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, &f); err == nil && f.Alias != "" {
			aliases[name] = f.Alias
		}
	}
	return aliases
}

// recoveryOf returns the command that returns every target of the fleet
// to its last good Freight, when an abort, a pause or a failure left some
// elsewhere: `kargo-fleet rollback`, which does what the recovery plan
// says (start, resume or retry the rollback).
func recoveryOf(fs *fleetv1alpha1.FleetStage, all []fleetv1alpha1.FleetRollout) *report.Recovery {
	rec := fleetrollout.PlanRecovery(fs, pointers(all))
	if rec.Action == fleetrollout.RecoveryNone {
		return nil
	}
	return &report.Recovery{
		Command: fmt.Sprintf("kargo-fleet rollback %s -n %s", fs.Name, fs.Namespace),
		Reason:  rec.Reason,
		Freight: report.FreightName{Name: rec.Freight},
	}
}
