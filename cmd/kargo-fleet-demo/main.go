// Command kargo-fleet-demo tells the fleet promotion story of `make demo` on
// a local control plane: the Kargo simulator stands in for Kargo, the
// kargo-fleet controller runs in this process, and live progress bars show
// a good Freight reaching 200 targets wave by wave, a bad one halting in
// the canary wave and being rolled back, and, with Prometheus on this
// machine, one that fails the canary wave's error-rate gate and is rolled
// back too. It exits 0 only if every step of the story happened as told
// (see internal/demo).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/demo"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

func main() {
	os.Exit(run())
}

func run() int {
	// A flag set of its own: controller-runtime registers --kubeconfig on
	// the global one.
	flag := flag.NewFlagSet(filepath.Base(os.Args[0]), flag.ExitOnError)
	var (
		opts    demo.Options
		logFile string
		verbose bool
		color   string
		profile string
	)
	flag.IntVar(&opts.Scenario.Targets, "targets", 200, "Number of targets in the fleet.")
	flag.DurationVar(&opts.Scenario.StepDelay, "step-delay", 300*time.Millisecond,
		"How long each simulated step of a target Promotion runs.")
	flag.DurationVar(&opts.PhaseTimeout, "phase-timeout", demo.DefaultPhaseTimeout, "Time limit of each step of the story.")
	flag.DurationVar(&opts.PollFloor, "poll-floor", demo.DefaultPollFloor,
		"Kargo simulator's poll floor (real Kargo: 10s).")
	flag.StringVar(&logFile, "log", filepath.Join("bin", "demo.log"), "File the controller and the Kargo simulator log to.")
	flag.BoolVar(&verbose, "v", false, "Log in detail (V(2)).")
	flag.BoolVar(&opts.ASCII, "ascii", false, "Draw progress bars with ASCII characters.")
	flag.StringVar(&color, "color", "auto", "Colour: auto, always or never.")
	flag.StringVar(&opts.Kubeconfig, "kubeconfig", filepath.Join("bin", "demo.kubeconfig"),
		"Where to write a kubeconfig for the local control plane (for kargo-fleet status beside the demo).")
	flag.BoolVar(&opts.Keep, "keep", false, "Keep the control plane running after the story, until Ctrl-C.")
	flag.StringVar(&opts.Dashboard, "dashboard", demo.DefaultDashboard,
		"Address to serve the read-only dashboard on while the story runs (empty: none).")
	flag.StringVar(&profile, "cpuprofile", "", "Write a CPU profile of the controller and the Kargo simulator to this file.")
	_ = flag.Parse(os.Args[1:])

	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "error creating the CPU profile: %v\n", err)
			return 2
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "error starting the CPU profile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}

	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "error creating the log folder: %v\n", err)
		return 2
	}
	logs, err := os.Create(logFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error creating the log file: %v\n", err)
		return 2
	}
	defer func() { _ = logs.Close() }()
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.Level(-2)
	}
	logger := zap.New(zap.WriteTo(logs), zap.Level(level))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	opts.Out = os.Stdout
	opts.LogFile = logFile
	opts.TTY = report.IsTerminal(os.Stdout) && os.Getenv("TERM") != "dumb"
	if opts.TTY {
		if width, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			opts.Width = width
		}
	}
	switch color {
	case "always":
		opts.Color = true
	case "auto":
		opts.Color = opts.TTY && os.Getenv("NO_COLOR") == ""
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, opts); err != nil {
		return 1
	}
	return 0
}
