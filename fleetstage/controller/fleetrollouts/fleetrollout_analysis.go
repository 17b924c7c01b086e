package fleetrollouts

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/promquery"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// The controller reads the Secret spec.analysis.prometheus.secretRef names
// in the FleetStage's namespace, uncached. The chart grants no Secret access
// in Project namespaces: the operator grants `get` on that Secret
// (docs/analysis.md); the FleetStage webhook requires its author may get it.

// analyses holds what the wave analyses of every rollout share: compiled
// programs and Prometheus clients, each rebuilt when what it was built from
// changes.
type analyses struct {
	mu       sync.Mutex
	programs map[programKey]*analysis.Program
	clients  map[types.UID]promClient
}

// programKey identifies the analysis of one wave of one FleetStage
// generation.
type programKey struct {
	fleet      types.UID
	generation int64
	wave       string
}

// promClient is a Prometheus client and what it was built from.
type promClient struct {
	from   string
	client *promquery.Client
}

// program returns the compiled analysis of a wave, or nil when it runs none.
func (a *analyses) program(fs *fleetv1alpha1.FleetStage, wave string) (*analysis.Program, error) {
	spec, ok := fleetspec.ForWave(&fs.Spec, wave)
	if !ok {
		return nil, nil
	}
	key := programKey{fleet: fs.UID, generation: fs.Generation, wave: wave}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.programs[key]; p != nil {
		return p, nil
	}
	p, err := analysis.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("error compiling the analysis of wave %q of FleetStage %q: %w", wave, fs.Name, err)
	}
	if a.programs == nil {
		a.programs = map[programKey]*analysis.Program{}
	}
	for k := range a.programs {
		if k.fleet == fs.UID && k.generation != fs.Generation {
			delete(a.programs, k)
		}
	}
	a.programs[key] = p
	return p, nil
}

// prometheus returns the client of the FleetStage's Prometheus, reading its
// Secret uncached; m times its queries.
func (a *analyses) prometheus(ctx context.Context, reader client.Reader, fs *fleetv1alpha1.FleetStage,
	m *rolloutMetrics) (*promquery.Client, error) {
	src := fs.Spec.Analysis.Prometheus
	var data map[string][]byte
	from := src.Address
	if src.Timeout != nil {
		from += "\x00" + src.Timeout.Duration.String()
	}
	if ref := src.SecretRef; ref != nil {
		sec := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: ref.Name}, sec); err != nil {
			return nil, fmt.Errorf("error reading Secret %q of spec.analysis.prometheus.secretRef: %w", ref.Name, err)
		}
		data = sec.Data
		from += "\x00" + string(sec.UID) + "/" + sec.ResourceVersion
	}
	cfg := promquery.ConfigFor(&src, data)
	cfg.Observe = m.queryObserver(fs.Namespace, fs.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[fs.UID]; ok && c.from == from {
		return c.client, nil
	}
	c, err := promquery.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("error configuring Prometheus of FleetStage %q: %w", fs.Name, err)
	}
	if a.clients == nil {
		a.clients = map[types.UID]promClient{}
	}
	a.clients[fs.UID] = promClient{from: from, client: c}
	return c, nil
}

// analyse gives the decision every wave analysis of a forward rollout: the
// compiled program, and for a wave whose analysis runs the run states read
// back from status with the measurements due now taken from Prometheus and
// recorded. The judgement is rollout.Decide's; this is the I/O.
func (r *FleetRolloutReconciler) analyse(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	obs *rollout.Observed) error {
	if ro.Spec.Direction != fleetv1alpha1.DirectionForward || fs.Spec.Analysis == nil || ro.Status.Phase.IsFinal() {
		return nil
	}
	now := r.clock.Now()
	var prom *promquery.Client
	var promErr error
	for i := range obs.Plan.Waves {
		wave := obs.Plan.Waves[i].Name
		p, err := r.analyses.program(fs, wave)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		wa := &rollout.WaveAnalysis{Program: p}
		if obs.Analyses == nil {
			obs.Analyses = map[string]*rollout.WaveAnalysis{}
		}
		obs.Analyses[wave] = wa
		st := waveAnalysisStatus(ro, wave)
		if st == nil {
			continue
		}
		wa.States = fleetspec.RunStates(p, st)
		due := rollout.DueMetrics(wa, now)
		if len(due) == 0 {
			continue
		}
		if prom == nil && promErr == nil {
			prom, promErr = r.analyses.prometheus(ctx, r.reader, fs, r.metrics)
		}
		sets := rollout.AnalysisTargets(&obs.Observation, wave)
		for _, m := range due {
			mp := p.Metrics()[m]
			o := measure(ctx, prom, promErr, mp, sets, now)
			wa.States[m].Record(o)
		}
	}
	return nil
}

// measure takes and judges one measurement. It never fails: what went
// wrong is the outcome's reason, an Error that makes the wave wait.
func measure(ctx context.Context, prom *promquery.Client, promErr error, mp *analysis.MetricProgram, sets analysis.TargetSets,
	now time.Time) analysis.Outcome {
	if promErr != nil {
		return analysis.Outcome{At: now, Phase: analysis.PhaseError, Reason: "Prometheus is unavailable: " + promErr.Error()}
	}
	q, err := mp.Render(sets)
	if err != nil {
		return analysis.Outcome{At: now, Phase: analysis.PhaseError, Reason: "error rendering the query: " + err.Error()}
	}
	return mp.Evaluate(prom.Measure(ctx, mp, q, now), sets.Targets)
}

// waveAnalysisStatus returns the analysis status a rollout recorded for a
// wave, or nil.
func waveAnalysisStatus(ro *fleetv1alpha1.FleetRollout, wave string) *fleetv1alpha1.WaveAnalysisStatus {
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == wave {
			return ro.Status.Waves[i].Analysis
		}
	}
	return nil
}
