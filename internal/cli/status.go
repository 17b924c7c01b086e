package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	rolloutplan "github.com/kargo-fleet/kargo-fleet/internal/rollout"
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
	output     *outputOptions
	all        bool
	ascii      bool
	color      string
	watch      bool
	interval   time.Duration
	// wait, timeout, freight and waitApprovals: --wait follows one rollout
	// to its end and exits with a code that says how it ended.
	wait          bool
	timeout       time.Duration
	freight       string
	waitApprovals bool
	barWidth      int
	// dashboardURL is the dashboard's base URL; when set, the FleetStage's
	// dashboard link is printed under the report.
	dashboardURL string

	streams genericiooptions.IOStreams
	clock   clock.WithTicker
	// tty says whether out is a terminal (colour and in-place redraw);
	// width is its width (0: unknown).
	tty   bool
	width int
}

func newStatusCommand(streams genericiooptions.IOStreams, kube kubeOptions, clk clock.WithTicker) *cobra.Command {
	o := &statusOptions{kube: kube, output: newOutputOptions(false, true), streams: streams, clock: clk,
		tty: report.IsTerminal(streams.Out), width: terminalWidth(streams.Out)}
	cmd := &cobra.Command{
		Use:   "status [FLEETSTAGE]",
		Short: "Show a fleet: targets, versions, and each wave's progress",
		Long: "Shows a FleetStage and its current and last FleetRollouts: target counts, how many targets run " +
			"which Freight, a progress bar per wave (succeeded, failed, in flight, pending) with the reason a " +
			"wave waits, and failed targets grouped by reason. FLEETSTAGE may be left out when the Project has " +
			"only one.\n\n" +
			"Text is laid out for the terminal's width (100 columns when the output is not a terminal): long " +
			"lines wrap and bars shrink, so --watch redraws in place. -o name prints the FleetStage and the " +
			"FleetRollouts shown; json, yaml and the template formats print the report.",
		Example: "  kargo-fleet status prod -n shop\n  kargo-fleet status -n shop -o json\n" +
			"  kargo-fleet status prod -n shop --wait --freight 3f2a9c1 --timeout 45m\n" +
			"  kargo-fleet status prod -n shop -o jsonpath='{.rollouts[0].phase}'\n" +
			"  kubectl fleet status prod -n shop --watch",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *statusOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "Show every FleetRollout of the FleetStage, not only the current and last ones.")
	f.BoolVar(&o.ascii, "ascii", false, "Draw progress bars with ASCII characters only.")
	f.StringVar(&o.color, "color", colorAuto, "Colour the output: auto (on a terminal, unless NO_COLOR is set), always or never.")
	f.BoolVarP(&o.watch, "watch", "w", false, "Keep showing the status, redrawn every --interval, until interrupted.")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "Time between two redraws with --watch, or two looks with --wait.")
	f.BoolVar(&o.wait, "wait", false, "Follow one rollout until it ends, printing a line whenever it moves, and exit with a code "+
		"that says how it ended: 0 succeeded, 2 failed or halted, 3 rolled back, 4 aborted or superseded, 5 waiting for "+
		"an approval or paused, 6 --timeout passed (1: any other error). For CI pipelines.")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "How long --wait waits.")
	f.StringVar(&o.freight, "freight", "", "With --wait: the Freight whose rollout to follow, which may not have started yet "+
		"(default: the current rollout, else the last one).")
	f.BoolVar(&o.waitApprovals, "wait-approvals", false, "With --wait: keep waiting while the rollout waits for an approval "+
		"or is paused, instead of exiting 5.")
	o.kube.completeFleetFlags(cmd)
	f.IntVar(&o.barWidth, "bar-width", report.DefaultBarWidth, "Width of the progress bars, in characters.")
	f.StringVar(&o.dashboardURL, "dashboard-url", os.Getenv(link.DashboardURLEnv),
		"Base URL of the kargo-fleet dashboard: the FleetStage's page there is printed under the report "+
			"(default: $"+link.DashboardURLEnv+").")
}

func (o *statusOptions) validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	switch o.color {
	case colorAuto, colorAlways, colorNever:
	default:
		return fmt.Errorf("--color %q: use auto, always or never", o.color)
	}
	if (o.watch || o.wait) && o.interval < 100*time.Millisecond {
		return fmt.Errorf("--interval must be at least 100ms")
	}
	switch {
	case o.wait && o.watch:
		return fmt.Errorf("--wait and --watch: choose one")
	case o.wait && o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive")
	case !o.wait && (o.freight != "" || o.waitApprovals):
		return fmt.Errorf("--freight and --wait-approvals go with --wait")
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
	if o.wait {
		return o.runWait(ctx, c, ns)
	}
	if !o.watch {
		frame, err := o.render(ctx, c, ns)
		if err != nil {
			return err
		}
		_, err = o.streams.Out.Write(frame)
		return err
	}
	live := report.NewLive(o.streams.Out, o.tty && o.output.text()).WithWidth(o.width)
	ticker := o.clock.NewTicker(o.interval)
	defer ticker.Stop()
	for {
		// A terminal resized while watching gets frames of its new width.
		if w := terminalWidth(o.streams.Out); w > 0 {
			o.width = w
			live.WithWidth(w)
		}
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
	switch {
	case o.output.names():
		objs := []apiruntime.Object{fs}
		for i := range rollouts {
			objs = append(objs, &rollouts[i])
		}
		err = o.output.printObjects(&buf, objs...)
	case !o.output.text():
		err = o.output.printValue(&buf, r)
	default:
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
	rec := rolloutplan.PlanRecovery(fs, pointers(all))
	if rec.Action == rolloutplan.RecoveryNone {
		return nil
	}
	return &report.Recovery{
		Command: fmt.Sprintf("kargo-fleet rollback %s -n %s", fs.Name, fs.Namespace),
		Reason:  rec.Reason,
		Freight: report.FreightName{Name: rec.Freight},
	}
}

// pointers returns pointers to the elements of s.
func pointers[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
