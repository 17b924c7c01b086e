package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/promserver"
)

// Defaults of Options.
const (
	// DefaultPhaseTimeout bounds each step of the story.
	DefaultPhaseTimeout = 8 * time.Minute
	// DefaultRefresh is how often progress is redrawn on a terminal.
	DefaultRefresh = 250 * time.Millisecond
	// DefaultSnapshotEvery is how often progress is printed elsewhere.
	DefaultSnapshotEvery = 5 * time.Second
	// DefaultPollFloor is the Kargo simulator's poll floor in the demo (real
	// Kargo re-runs a polling step at most every 10 s).
	DefaultPollFloor = 200 * time.Millisecond
)

// Options configure Run.
type Options struct {
	// Out receives the banner, the live progress and the summary.
	Out io.Writer
	// LogFile names the file the controller and the simulator log to; it is
	// only shown in the banner (the caller sets up logging).
	LogFile string
	// TTY redraws progress in place; otherwise snapshots are appended.
	TTY bool
	// Color paints the progress bars.
	Color bool
	// ASCII draws the progress bars with ASCII characters.
	ASCII bool
	// Width is the terminal's width: on a terminal, longer lines are cut so
	// the picture redraws in place (0: no limit).
	Width int
	// Scenario sizes the story.
	Scenario Scenario
	// PhaseTimeout bounds each step (default DefaultPhaseTimeout).
	PhaseTimeout time.Duration
	// Refresh and SnapshotEvery pace the progress display.
	Refresh       time.Duration
	SnapshotEvery time.Duration
	// PollFloor is the Kargo simulator's poll floor (default DefaultPollFloor).
	PollFloor time.Duration
	// Shards start a simulated Kargo controller for each of these shards
	// besides the default one (kargosim.Options.Shards); none by default.
	Shards []string
	// Clock times the story (default: the real clock).
	Clock clock.WithTicker
	// Kubeconfig, when set, is where a kubeconfig for the local control
	// plane is written, so `kargo-fleet status` can be run beside the demo
	// (default: a temporary file, used by the last expectation).
	Kubeconfig string
	// Keep leaves the control plane running after the story until ctx is
	// done.
	Keep bool
	// Dashboard is the address `kargo-fleet dashboard` is served on while
	// the story runs ("" serves none). When the address is taken, a free
	// port is used instead.
	Dashboard string
}

func (o Options) withDefaults() Options {
	if o.PhaseTimeout <= 0 {
		o.PhaseTimeout = DefaultPhaseTimeout
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.PollFloor <= 0 {
		o.PollFloor = DefaultPollFloor
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.Scenario = o.Scenario.withDefaults()
	return o
}

// ErrStoryBroken is returned (wrapped) when an expectation did not hold.
var ErrStoryBroken = errors.New("the demo did not happen as told")

// Run tells the story: it starts the local environment, runs both phases
// and prints the summary. It returns nil only if every expectation held.
func Run(ctx context.Context, o Options) error {
	o = o.withDefaults()
	s := &story{o: o, out: o.Out, good: FreightName(GoodAlias), bad: FreightName(BadAlias), start: o.Clock.Now(),
		skipAnalysis: analysisChapter()}
	if o.Dashboard != "" {
		s.dash = listenDashboard(o.Dashboard)
	}
	s.banner()
	err := s.run(ctx)
	s.summary(err)
	if o.Keep && s.env != nil {
		fmt.Fprintf(s.out, "\nThe control plane keeps running: kargo-fleet status %s -n %s --kubeconfig %s --watch\n"+
			"Press Ctrl-C to stop it.\n", FleetStageName, Project, s.kubeconfig)
		if s.dash != nil && s.dash.ln != nil {
			fmt.Fprintf(s.out, "The dashboard keeps serving at %s\n", s.dash.url)
		}
		<-ctx.Done()
	}
	s.dash.stop()
	s.stopPrometheus()
	if s.env != nil {
		if stopErr := s.env.Stop(); stopErr != nil {
			fmt.Fprintf(s.out, "warning: stopping the local control plane: %v\n", stopErr)
		}
	}
	return err
}

// story is one run of the demo.
type story struct {
	o         Options
	out       io.Writer
	env       *fleetenv.Env
	c         client.Client
	good, bad string
	start     time.Time
	steps     []stepResult

	// canaryFailed and canaryMax are the canary wave's failures and allowance.
	canaryFailed, canaryMax int
	movedBack               int32
	// kubeconfig reaches the control plane as its administrator.
	kubeconfig string
	// dash serves the dashboard once the control plane is up.
	dash *demoDashboard
	// skipAnalysis says why the error-rate chapter is not told ("": it is);
	// prom is the Prometheus it reads, with its storage in promDir.
	skipAnalysis string
	prom         *promserver.Server
	promDir      string
}

// run runs the expectations in order and stops at the first that fails.
func (s *story) run(ctx context.Context) error {
	for _, e := range s.expectations() {
		begin := s.o.Clock.Now()
		detail, err := e.check(ctx)
		res := stepResult{title: e.title, detail: detail, took: s.o.Clock.Since(begin), err: err}
		s.steps = append(s.steps, res)
		s.printStep(len(s.steps), res)
		if err != nil {
			return fmt.Errorf("%w: expectation %d (%s) did not hold: %w", ErrStoryBroken, len(s.steps), e.title, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// expectation is one step of the story: what should happen, and the check
// that makes it happen and confirms it did.
type expectation struct {
	title string
	check func(context.Context) (string, error)
}

func (s *story) expectations() []expectation {
	sc := s.o.Scenario
	gate := ""
	if s.analysisOn() {
		gate = ", canary gated on its error rate"
	}
	out := []expectation{
		{"a local control plane, the Kargo simulator and the kargo-fleet controller are running", s.startEnv},
		{fmt.Sprintf("Project %q: Warehouse, Freight %s and %s, Stage %q, FleetStage %q (%d targets%s), no ProjectConfig",
			Project, GoodAlias, BadAlias, AdoptedStage, FleetStageName, sc.Targets, gate), s.createProject},
		{"the FleetStage is Ready: one wave Stage per wave, one target Stage per target, a step token", s.fleetReady},
	}
	if s.analysisOn() {
		out = append(out, expectation{"Prometheus scrapes the request counters the Kargo simulator serves for every target",
			s.checkScrape})
	}
	out = append(out,
		expectation{fmt.Sprintf("phase 1: %s (good) goes through every wave%s; critical waits for approval", GoodAlias,
			map[bool]string{true: ", canary's analysis passes"}[s.analysisOn()]), s.phaseGood},
		expectation{fmt.Sprintf("phase 1: every target runs %s, the FleetStage's last good Freight", GoodAlias), s.checkGood},
		expectation{fmt.Sprintf("phase 2: %s (bad) halts in canary: the wave breaches its failure threshold", BadAlias), s.phaseBad},
		expectation{fmt.Sprintf("phase 2: general and critical never received %s", BadAlias), s.checkContained},
		expectation{fmt.Sprintf("phase 2: the automatic rollback returned every moved target to %s", GoodAlias), s.checkRolledBack})
	if s.analysisOn() {
		out = append(out, s.analysisExpectations()...)
	}
	return append(out, expectation{fmt.Sprintf("kargo-fleet status, through a kubeconfig, shows every target on %s",
		GoodAlias), s.checkStatusCommand},
		expectation{"kargo-fleet audit: every turn of the story recorded with who decided it, the hash chain whole",
			s.checkAudit})
}

// startEnv starts the control plane, the simulator and the controller.
func (s *story) startEnv(ctx context.Context) (string, error) {
	sim := kargosim.Options{PollFloor: s.o.PollFloor, MaxConcurrentReconciles: 16,
		MaxConcurrentStageReconciles: 8, Seed: 1, Shards: s.o.Shards}
	if s.analysisOn() {
		sim.ServiceMetrics = ServiceMetrics()
	}
	env, err := fleetenv.Start(ctx, fleetenv.Options{
		Simulator:  sim,
		Controller: manager.Options{MaxConcurrentReconciles: 4},
	})
	if err != nil {
		return "", err
	}
	s.env = env
	// The operator's client: an administrator, not rate-limited like a
	// default client, because the demo looks at the fleet four times a
	// second.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 200, 400
	if s.c, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		return "", fmt.Errorf("error creating a client: %w", err)
	}
	if err := s.dash.serve(env); err != nil {
		return "", err
	}
	s.kubeconfig = s.o.Kubeconfig
	if s.kubeconfig == "" {
		dir, err := os.MkdirTemp("", "kargo-fleet-demo-")
		if err != nil {
			return "", err
		}
		s.kubeconfig = filepath.Join(dir, "kubeconfig")
	}
	if err := fleetenv.WriteKubeconfig(env.Config, s.kubeconfig); err != nil {
		return "", err
	}
	prom := s.skipAnalysis
	if s.analysisOn() {
		if prom, err = s.startPrometheus(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("kube-apiserver %s at %s (%s Kargo CRDs), step server %s\n    %s\n"+
		"    watch it from another terminal: kargo-fleet status %s -n %s --kubeconfig %s --watch",
		envtest.K8sVersion, env.Config.Host, env.KargoCRDs, env.StepServerURL, prom, FleetStageName, Project, s.kubeconfig), nil
}
