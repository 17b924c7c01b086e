// Command scale runs a fleet rollout at scale on a local control plane and
// reports what kargo-fleet's controller costs: wall time, API writes per
// target, peak memory, the largest object it writes, and how fast it halts
// and rolls back after a threshold breach.
//
//	go run ./hack/scale -targets 10000
//
// The kube-apiserver, etcd and the Kargo simulator run as in the
// integration tests (internal/fleetenv); the controller runs as its own
// process (bin/kargo-fleet) so its memory and API requests are measured
// alone: memory from /proc, writes from its own metrics endpoint
// (client-go's rest_client_requests_total, every method but GET).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // served only with -pprof
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

// config is the command line.
type config struct {
	fleetShape
	simWorkers  int
	simStages   int
	concurrency int
	wait        time.Duration
	hold        time.Duration
	report      string
	binary      string
	build       bool
	ctrlFlags   string
	goMemLimit  string
	pprofAddr   string
	phases      string
	probe       bool
	partitions  int
}

// has reports whether the run includes the named phase.
func (c config) has(phase string) bool {
	return slices.Contains(strings.Split(c.phases, ","), phase)
}

func main() {
	cfg := config{}
	flag.IntVar(&cfg.targets, "targets", 10000, "Number of inline targets.")
	flag.IntVar(&cfg.criticalEvery, "critical-every", 100, "Every n-th target is tier=critical (the last wave).")
	flag.IntVar(&cfg.canaryFailEvery, "canary-fail-every", 10, "Every n-th canary target fails with the bad Freight.")
	flag.IntVar(&cfg.canaryMaxFailures, "canary-max-failures", -1, "maxFailures of the canary wave (default: a fifth of the canary targets that break, so the breach comes mid-wave).")
	flag.IntVar(&cfg.generalConcurrent, "general-concurrency", 500, "maxConcurrent of the general wave.")
	flag.IntVar(&cfg.shards, "shards", 0, "Spread the targets round-robin over this many Kargo shards, each with its own simulated Kargo controller (0: every target on the default controller).")
	flag.IntVar(&cfg.simWorkers, "sim-workers", 16, "Promotion workers of the Kargo simulator (Kargo's default is 4).")
	flag.IntVar(&cfg.simStages, "sim-stage-workers", 8, "Stage workers of the Kargo simulator.")
	flag.IntVar(&cfg.concurrency, "max-concurrent-reconciles", 4, "The controller's --max-concurrent-reconciles.")
	flag.DurationVar(&cfg.wait, "wait", 30*time.Minute, "Longest wait for any one phase.")
	flag.StringVar(&cfg.report, "report", filepath.Join(envtest.RepoRoot(), "bin", "scale-report.md"), "Where to write the Markdown report.")
	flag.StringVar(&cfg.binary, "binary", filepath.Join(envtest.RepoRoot(), "bin", "kargo-fleet"), "The kargo-fleet binary to run as the controller.")
	flag.StringVar(&cfg.ctrlFlags, "controller-flags", "", "More flags for the controller, space-separated.")
	flag.StringVar(&cfg.goMemLimit, "gomemlimit", chartGoMemLimit(), "GOMEMLIMIT of the controller process (default: the chart's controller.goMemLimit); empty leaves it unset.")
	flag.StringVar(&cfg.pprofAddr, "pprof", "", "Serve net/http/pprof of this process (the simulator and the harness) here, e.g. 127.0.0.1:6060.")
	flag.StringVar(&cfg.phases, "phases", "expand,rollout,breach", "Phases, in order: expand (FleetStage to Stages), rollout (a good Freight), breach (a bad one: halt and rollback); each needs the ones before it.")
	flag.BoolVar(&cfg.probe, "freight-probe", true, "Check whether the API server stores a Freight whose status names every target Stage, as Kargo would write it.")
	flag.DurationVar(&cfg.hold, "hold", 0, "After the phases, keep the controller running this long (checking it has not exited), then add a target and wait for the FleetStage to take it in.")
	flag.IntVar(&cfg.partitions, "partitions", 1, "Fleets of -targets targets each, one per Project (scale-1 ... scale-n) under one controller, run one after the other as a pipeline orders partitions; 1 runs one fleet in Project scale.")
	flag.BoolVar(&cfg.build, "build", true, "Build the binary first (go build -o <binary> ./cmd/kargo-fleet).")
	flag.Parse()
	if cfg.canaryMaxFailures < 0 {
		// The canary holds 5% of the fleet; every canaryFailEvery-th member breaks.
		breaking := (cfg.targets*5/100 + cfg.canaryFailEvery - 1) / max(cfg.canaryFailEvery, 1)
		cfg.canaryMaxFailures = breaking / 5
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// chartGoMemLimit returns the chart's default controller.goMemLimit, so
// the run measures the controller as the chart deploys it.
func chartGoMemLimit() string {
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "charts", "kargo-fleet", "values.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale: reading the chart's values:", err)
		os.Exit(1)
	}
	var values struct {
		Controller struct {
			GoMemLimit string `json:"goMemLimit"`
		} `json:"controller"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		fmt.Fprintln(os.Stderr, "scale: reading the chart's values:", err)
		os.Exit(1)
	}
	return values.Controller.GoMemLimit
}

func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func run(ctx context.Context, cfg config) (err error) {
	started := time.Now()
	if cfg.pprofAddr != "" {
		go func() { _ = http.ListenAndServe(cfg.pprofAddr, nil) }()
	}
	dir := filepath.Dir(cfg.report)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if cfg.build {
		if err := buildController(ctx, cfg.binary); err != nil {
			return err
		}
	}
	logFile, err := os.Create(filepath.Join(dir, "scale-harness.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel), zap.StacktraceLevel(zapcore.PanicLevel)))

	logf("starting kube-apiserver, etcd and the Kargo simulator")
	env, err := fleetenv.Start(ctx, fleetenv.Options{
		Simulator: kargosim.Options{Seed: 7, MaxConcurrentReconciles: cfg.simWorkers, MaxConcurrentStageReconciles: cfg.simStages,
			Shards: cfg.shardNames()},
		ExternalController: true,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	// For a look from outside while the run goes on (kubectl --kubeconfig).
	if err := fleetenv.WriteKubeconfig(env.Config, filepath.Join(dir, "scale-admin.kubeconfig")); err != nil {
		return err
	}
	logf("starting the controller process (log: %s)", filepath.Join(dir, "scale-controller.log"))
	proc, err := startController(ctx, env, cfg.binary, dir, cfg.concurrency, cfg.goMemLimit, strings.Fields(cfg.ctrlFlags))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, proc.stop()) }()
	for i, ns := range cfg.partitionNamespaces() {
		if err := runPartition(ctx, cfg, env, proc, i+1, ns, started); err != nil {
			return fmt.Errorf("partition %s: %w", ns, err)
		}
	}
	return nil
}

// partitionNamespaces are the Projects of the run's fleets.
func (c config) partitionNamespaces() []string {
	if c.partitions <= 1 {
		return []string{defaultNamespace}
	}
	out := make([]string, c.partitions)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", defaultNamespace, i+1)
	}
	return out
}

// reportPath is where the report of the partition in namespace goes: the
// report flag for a run of one fleet, one file per Project otherwise.
func (c config) reportPath(namespace string) string {
	if c.partitions <= 1 {
		return c.report
	}
	return strings.TrimSuffix(c.report, ".md") + "-" + namespace + ".md"
}

// runPartition creates one fleet in its own Project and runs the phases on
// it, with the controller holding every partition created before; the hold
// and the Freight probe run after the last partition only.
func runPartition(ctx context.Context, cfg config, env *fleetenv.Env, proc *controllerProc, partition int, namespace string,
	started time.Time) error {
	shape := cfg.fleetShape
	shape.namespace = namespace
	targets, failing, err := shape.inlineTargets()
	if err != nil {
		return err
	}
	// The observer's watches end before the control plane stops: the
	// apiserver would otherwise wait on them past envtest's stop timeout.
	obsCtx, stopObserver := context.WithCancel(ctx)
	defer stopObserver()
	obs, err := startObserver(obsCtx, env.Config, namespace)
	if err != nil {
		return err
	}
	h := &harness{c: env.Client, obs: obs, ctrl: proc, shape: shape, wait: cfg.wait}
	res := &results{cfg: cfg, namespace: namespace, partition: partition, started: started, failing: failing}
	if err := createProject(ctx, env.Client, namespace); err != nil {
		return err
	}
	idle, err := h.quiesce(ctx)
	if err != nil {
		return err
	}
	res.idle = writesOf(idle)

	if err := h.phases(ctx, cfg, res, targets); err != nil {
		return err
	}
	if partition >= cfg.partitions {
		if err := h.holdAndProbe(ctx, cfg, res); err != nil {
			return err
		}
	}

	if res.sizes, err = h.largestObjects(ctx); err != nil {
		return err
	}
	if res.events, res.eventTotal, err = h.eventCounts(ctx); err != nil {
		return err
	}
	final, err := scrape(proc.metricsURL)
	if err != nil {
		return err
	}
	res.metrics = fleetMetrics(final)
	res.heapBytes = gauge(final, "go_memstats_heap_alloc_bytes")
	res.peakRSS, res.hwm, res.finalRSS = proc.rss.peaks()
	res.total = time.Since(started)

	return writeReport(cfg.reportPath(namespace), res)
}

// buildController builds the controller binary the run starts.
func buildController(ctx context.Context, binary string) error {
	logf("building %s", binary)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/kargo-fleet")
	cmd.Dir, cmd.Stdout, cmd.Stderr = envtest.RepoRoot(), os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("error building the controller: %w", err)
	}
	return nil
}

// holdAndProbe holds the controller and probes a large Freight, when the
// command line asks for them.
func (h *harness) holdAndProbe(ctx context.Context, cfg config, res *results) (err error) {
	if cfg.hold > 0 {
		logf("holding the controller for %s", cfg.hold)
		if res.hold, err = h.hold(ctx, cfg.hold); err != nil {
			return err
		}
		logf("  %s", res.hold)
	}
	if cfg.probe {
		logf("probing a Freight whose status names %d target Stages", cfg.targets)
		if res.probe, err = probeFreight(ctx, h.c, cfg.targets); err != nil {
			return err
		}
	}
	return nil
}

// writeReport prints the report and writes it to path.
func writeReport(path string, res *results) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	res.write(os.Stdout)
	res.write(f)
	if err := f.Close(); err != nil {
		return err
	}
	logf("report written to %s", path)
	return nil
}

// phases runs the phases the command line asks for.
func (h *harness) phases(ctx context.Context, cfg config, res *results, targets []fleetv1alpha1.InlineTarget) error {
	if !cfg.has("expand") {
		return nil
	}
	var err error
	logf("phase A: expanding a FleetStage of %d targets", cfg.targets)
	if res.setup, err = h.setup(ctx, targets); err != nil {
		return err
	}
	logf("  Ready after %s, Stages initialised after %s, %.0f writes, peak RSS %.0f MiB",
		ms(res.setup.ready), ms(res.setup.settled), res.setup.writes.total(), float64(res.setup.peak)/mib)
	if cfg.has("rollout") {
		logf("phase A: rolling out %s", goodFreight)
		if res.good, err = h.rolloutGood(ctx); err != nil {
			return err
		}
		logf("  %s %s in %s, %.0f writes, peak RSS %.0f MiB", res.good.name, res.good.phase, ms(res.good.rolloutWall),
			res.good.writes.total(), float64(res.good.peak)/mib)
	}
	if cfg.has("rollout") && cfg.has("breach") {
		logf("phase B: rolling out %s, which breaks %d canary targets", badFreight, res.failing)
		if res.breach, err = h.rolloutBad(ctx); err != nil {
			return err
		}
		logf("  %s %s, rollback %s %s, %.0f writes", res.breach.bad.name, res.breach.bad.phase, res.breach.rollback.name,
			res.breach.rollback.phase, res.breach.writes.total())
	}
	return nil
}
